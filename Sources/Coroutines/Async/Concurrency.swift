// The bridge to Swift Concurrency, both ways.

/// Awaits `async` code from a coroutine: runs `operation` in a new Swift `Task` and suspends the
/// coroutine, never its thread, until it returns or throws.
///
/// ```swift
/// let user = try co_await { try await api.user(id: 42) }
/// ```
///
/// Cancelling the coroutine cancels the `Task` and throws `CancellationError` at once, without
/// waiting for `operation` to notice: like any `co_await`, the coroutine unwinds now. The task
/// runs on the global concurrent executor (or the actor `operation` is isolated to); the
/// coroutine resumes on its own scheduler, as always.
///
/// Each call costs a `Task` and two thread hand-offs; see the "Swift Concurrency" article for
/// measured costs and for when to use which.
///
/// - Parameters:
///   - priority: The task's priority; `nil` lets the runtime choose.
///   - operation: The async work.
/// - Throws: What `operation` throws; `CancellationError` if the coroutine is cancelled;
///   ``CoroutineError/notInCoroutine`` outside a coroutine.
public func co_await<T: Sendable>(
  priority: TaskPriority? = nil, async operation: sending @escaping () async throws -> T
) throws -> T {
  let coroutine = try Coroutine.requireCurrent()
  if coroutine.isCancelled { throw CancellationError() }
  // `operation` was sent to us: nothing else can touch it, and only the task below calls it.
  nonisolated(unsafe) let owned = operation
  var task: Task<Void, Never>?
  defer { task?.cancel() }
  return try coroutine.suspend(for: .swiftTask) { (resumer: CoroutineResumer<T>) in
    task = Task(priority: priority) {
      do {
        resumer.resume(.success(try await owned()))
      } catch {
        resumer.resume(.failure(error))
      }
    }
  }
}

extension CoFuture where T: Sendable {
  /// The future's value, awaited from Swift Concurrency: suspends the `Task`, never a thread.
  ///
  /// ```swift
  /// let total = try await co_launch(on: queue) { try sumFiles() }.value
  /// ```
  ///
  /// Cancelling the awaiting `Task` cancels the future: a ``CoTask``'s coroutine (and its
  /// children) unwind with `CancellationError`, and the value then throws whatever the body
  /// ended with; any other future is rejected with `CancellationError`.
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
