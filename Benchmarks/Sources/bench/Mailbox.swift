import Foundation

/// A thread of its own that runs posted jobs in order, sleeping while it has none: "another
/// thread" for the cross-thread figures, the same for the coroutine and the Swift baseline.
final class Mailbox: @unchecked Sendable {  // `jobs` is guarded by `condition`
  private let condition = NSCondition()
  private var jobs: [@Sendable () -> Void] = []

  init() {
    let thread = Thread { [unowned self] in self.serve() }
    thread.start()
  }

  func post(_ job: @escaping @Sendable () -> Void) {
    condition.lock()
    jobs.append(job)
    condition.signal()
    condition.unlock()
  }

  private func serve() {
    while true {
      condition.lock()
      while jobs.isEmpty { condition.wait() }
      let batch = jobs
      jobs.removeAll(keepingCapacity: true)
      condition.unlock()
      for job in batch { job() }
    }
  }
}
