extension CoFuture where T: Sendable {
  /// The future's value, awaited from Swift Concurrency. Cancelling the awaiting `Task` cancels
  /// the future (for a ``CoTask``, its coroutine).
  public var value: T {
    get async throws {
      try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
          whenComplete { continuation.resume(with: $0) }
        }
      } onCancel: {
        cancel()
      }
    }
  }
}
