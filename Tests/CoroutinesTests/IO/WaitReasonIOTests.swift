import Foundation
import Testing

@testable import Coroutines

extension IOTests {
  /// A coroutine waiting for a descriptor names it, and which way it waits.
  @Suite struct WaitReasonIOTests {
    @Test func aDescriptorWaitNamesTheDescriptorAndTheDirection() throws {
      let tag = "fd-\(UUID().uuidString)"
      // A snapshot names the main loop's scheduler by comparing with it, which makes the main
      // loop (and its poller) for the life of the process: made here, before the count.
      _ = CoroutineLoop.main
      let (reasons, read, write) = try runOnLoopLeavingNoDescriptor {
        () -> ([String: String], Int32, Int32) in
        let pipe = try TestPipe()
        defer { pipe.close() }
        var chunk = [UInt8](repeating: 7, count: 65_536)
        while Glibc.write(pipe.writeEnd, &chunk, chunk.count) > 0 {}  // full: writing waits
        let other = try TestPipe()
        defer { other.close() }
        let reader = co_launch(name: "\(tag) reads") {
          _ = try co_wait(fd: other.readEnd, for: .readable)
        }
        let writer = co_launch(name: "\(tag) writes") {
          _ = try co_wait(fd: pipe.writeEnd, for: .writable)
        }
        try co_delay(0)  // both park
        let reasons = Dictionary(
          // Without backtraces: libunwind, loaded for the first one, keeps a pipe of its own
          // open for the life of the process, which the descriptor count would take for a
          // leak of this test's.
          CoroutineRegistry.snapshots().compactMap { snapshot in
            snapshot.name.flatMap { name in
              name.hasPrefix(tag) ? (name, snapshot.waitReason ?? "none") : nil
            }
          }, uniquingKeysWith: { a, _ in a })
        reader.cancel()
        writer.cancel()
        _ = try? co_await(reader)
        _ = try? co_await(writer)
        return (reasons, other.readEnd, pipe.writeEnd)
      }
      #expect(reasons["\(tag) reads"] == "fd \(read) readable")
      #expect(reasons["\(tag) writes"] == "fd \(write) writable")
    }
  }
}
