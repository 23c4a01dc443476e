import Foundation

extension CoroutineLoop {
  /// The loop that coroutines of other schedulers wait for descriptors in: it runs on a thread
  /// of its own from its first use to the end of the process.
  static let sharedPoller: CoroutineLoop = {
    let loop = CoroutineLoop(keepsRunning: true)
    let thread = Thread { loop.run() }
    thread.name = "coroutines.poller"
    thread.start()
    return loop
  }()
}
