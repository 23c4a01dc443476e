import Dispatch
import Foundation

/// Follows the process's resident memory while an experiment runs, sampling it every
/// millisecond on its own queue, and keeps the peak.
final class MemorySampler {
  private let peak: Locked<Int>
  private let timer: any DispatchSourceTimer
  /// Resident bytes when sampling started.
  let baseline: Int

  /// Starts sampling now.
  init() {
    let baseline = MemorySampler.residentBytes()
    let peak = Locked(baseline)
    self.baseline = baseline
    self.peak = peak
    timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "memory-sampler"))
    timer.schedule(deadline: .now(), repeating: .milliseconds(1))
    timer.setEventHandler {
      let now = MemorySampler.residentBytes()
      peak.withLock { $0 = max($0, now) }
    }
    timer.resume()
  }

  /// Takes a sample at once: call it at the moment the experiment is largest.
  func sample() {
    let now = MemorySampler.residentBytes()
    peak.withLock { $0 = max($0, now) }
  }

  /// Stops sampling and returns the peak growth over the baseline, in bytes.
  func stop() -> Int {
    timer.cancel()
    sample()
    return max(0, peak.value - baseline)
  }

  /// The process's resident set size, from `/proc/self/statm`; 0 where there is none.
  static func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else {
      return 0
    }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
  }
}
