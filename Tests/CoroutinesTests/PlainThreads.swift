import Dispatch
import Foundation

@testable import Coroutines

/// Helpers for tests in which a thread that runs no loop answers a coroutine.
enum PlainThreads {
  /// Waits on this (plain) thread until `condition` holds or ten seconds pass; whether it held.
  static func poll(_ condition: () -> Bool) -> Bool {
    let deadline = DispatchTime.now() + .seconds(10)
    while !condition() {
      if DispatchTime.now() > deadline { return false }
      sched_yield()
    }
    return true
  }

  /// Runs `body` on a thread of its own, which runs no loop: the polls above spin, and on
  /// Dispatch's threads they held back other tests' jobs until Dispatch added a thread.
  static func start(_ body: @escaping @Sendable () -> Void) {
    Thread(block: body).start()
  }

  /// Awaits `task` in the calling coroutine: "cancelled" when it ends with
  /// `CancellationError`, else its value described.
  static func valueOrCancelled<T>(of task: CoTask<T>) throws -> String {
    do {
      return "value \(try co_await(task))"
    } catch is CancellationError {
      return "cancelled"
    }
  }

  /// The task's value, waited for on this thread.
  static func value<T>(of task: CoTask<T>) throws -> T {
    let done = DispatchSemaphore(value: 0)
    task.whenComplete { _ in done.signal() }
    done.wait()
    return try task.result!.get()
  }
}
