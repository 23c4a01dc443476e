import Coroutines
import Testing

@testable import ExamplesKit

@Suite struct ImageWalkthroughTests {
  static func configuration() -> ImageWalkthrough.Configuration {
    var configuration = ImageWalkthrough.Configuration()
    configuration.imageSide = 256
    configuration.thumbnailSide = 32
    configuration.tickInterval = 0.001
    configuration.network = StubConditions(latency: 0.001...0.002, failureRate: 0)
    return configuration
  }

  @Test func theLoopKeepsTickingWhileTheBackgroundWorks() throws {
    var configuration = Self.configuration()
    let waited = Locked<Bool?>(nil)
    // Stall the background stage until the loop has ticked twice more: if the pipeline blocked
    // the loop, the ticks would never come and the wait would time out.
    configuration.backgroundProbe = { ticker in
      let reached = ticker.wait(untilTicks: ticker.ticks + 2, timeout: 30)
      waited.withLock { $0 = reached }
    }
    let report = try ImageWalkthrough.run(configuration, narrator: .silent())
    #expect(waited.value == true)
    #expect(report.ticksDuringBackgroundWork >= 2)
  }

  @Test func stagesRunWhereTheyShould() throws {
    let report = try ImageWalkthrough.run(Self.configuration(), narrator: .silent())
    #expect(report.backgroundWorkRanOffTheLoop)
    #expect(report.shownOnTheLoop)
  }

  @Test func theThumbnailIsTheDownscaledImage() throws {
    let report = try ImageWalkthrough.run(Self.configuration(), narrator: .silent())
    let image = try ImageCodec.decode(ImageCodec.encode(width: 256, height: 256, seed: 42))
    #expect(report.thumbnail == image.downscaled(toSide: 32))
    #expect(Set(report.thumbnail.pixels).count > 8, "the thumbnail should not be flat")
  }

  @Test func aFailedDownloadThrowsAndStopsTheTicker() throws {
    var configuration = Self.configuration()
    configuration.network.failureRate = 1
    #expect(throws: StubError.self) {
      try ImageWalkthrough.run(configuration, narrator: .silent())
    }
  }

  @Test func decodingRejectsAFileThatIsNotAnImage() {
    #expect(throws: ImageCodec.DecodingError.self) {
      try ImageCodec.decode(Array("not an image".utf8).withUnsafeBytes { .init($0) })
    }
  }

  @Test func downscalingAveragesBlocks() {
    let image = PixelBuffer(
      width: 2, height: 2, pixels: [0x0000_0000, 0x0000_0004, 0x0000_0008, 0x0000_000c])
    #expect(image.downscaled(toSide: 1).pixels == [0x0000_0006])
  }
}
