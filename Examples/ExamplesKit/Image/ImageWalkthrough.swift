import Coroutines
import Dispatch
import Foundation

/// Download → decode → thumbnail on a background queue → show on the main loop, written as
/// one coroutine, while a ticker on the same loop keeps ticking.
public enum ImageWalkthrough {
  /// The image, the network and the ticker.
  public struct Configuration: Sendable {
    /// The downloaded image is `imageSide × imageSide` pixels.
    public var imageSide = 1024
    /// The thumbnail is `thumbnailSide × thumbnailSide` pixels.
    public var thumbnailSide = 64
    /// Seconds between two ticks of the ticker.
    public var tickInterval = 0.005
    /// Latency of the download (it does not fail by default).
    public var network = StubConditions(latency: 0.030...0.060, failureRate: 0)
    /// Called on the background queue between decoding and downscaling, with the ticker; tests
    /// use it to wait there until the loop has ticked.
    public var backgroundProbe: (@Sendable (Ticker) -> Void)?

    /// The defaults: a 1024×1024 image, a 64×64 thumbnail, a tick every 5 ms.
    public init() {}
  }

  /// What happened.
  public struct Report: Sendable {
    /// The thumbnail shown.
    public let thumbnail: PixelBuffer
    /// Ticks of the loop while the coroutine was decoding and downscaling in the background.
    public let ticksDuringBackgroundWork: Int
    /// Whether decoding and downscaling ran off the loop's thread.
    public let backgroundWorkRanOffTheLoop: Bool
    /// Whether the thumbnail was shown on the loop.
    public let shownOnTheLoop: Bool
  }

  static let url = "https://images.example.org/photo.pxl"

  /// The entry for `swift run examples image`.
  public static let walkthrough = Walkthrough(
    name: "image",
    summary: "download, decode and thumbnail in the background, show on the main loop",
    stubs: "the network"
  ) { narrator in
    let report = try run(Configuration(), narrator: narrator)
    guard report.backgroundWorkRanOffTheLoop, report.shownOnTheLoop else {
      throw WalkthroughCheckFailed("a stage ran on the wrong thread")
    }
    narrator.show(
      "\n  One coroutine read top to bottom; it left the loop for the CPU work and came back, and"
        + "\n  the loop ticked \(report.ticksDuringBackgroundWork) times meanwhile: it never blocked."
    )
  }

  /// Runs the pipeline and the ticker on a fresh loop on the calling thread.
  public static func run(_ configuration: Configuration, narrator: Narrator) throws -> Report {
    let side = configuration.imageSide
    let file = ImageCodec.encode(width: side, height: side, seed: 42)
    let http = StubHTTPClient(conditions: configuration.network) { $0 == url ? file : nil }
    let background = DispatchQueue(label: "image-work", qos: .userInitiated)
    return try CoroutineLoop.run {
      let loop = CoroutineLoop.current
      let ticker = Ticker()
      let tickerTask = co_launch(name: "ticker") {
        while true {
          try co_delay(configuration.tickInterval)
          narrator.say("tick \(ticker.tick())")
        }
      }
      defer { tickerTask.cancel() }

      narrator.say("downloading \(url)")
      let data: Data = try co_await { http.get(url, completion: $0) }
      narrator.say("downloaded \(data.count) bytes; moving to a background queue")
      let ticksBefore = ticker.ticks
      let (thumbnail, offLoop) = try co_await(on: background) { () throws -> (PixelBuffer, Bool) in
        narrator.say("decoding a \(side)×\(side) image")
        let image = try ImageCodec.decode(data)
        narrator.say("decoded \(image.pixels.count) pixels; downscaling")
        configuration.backgroundProbe?(ticker)
        let side = configuration.thumbnailSide
        let thumbnail = image.downscaled(toSide: side)
        narrator.say("thumbnail ready; back to the main loop")
        return (thumbnail, CoroutineLoop.current == nil)
      }
      let ticksDuring = ticker.ticks - ticksBefore
      let shownOnLoop = CoroutineLoop.current === loop
      narrator.say(
        "showing the \(thumbnail.width)×\(thumbnail.height) thumbnail "
          + "(checksum \(String(thumbnail.checksum, radix: 16))):")
      for line in thumbnail.asciiArt(columns: 48, rows: 12) { narrator.show("    \(line)") }
      return Report(
        thumbnail: thumbnail, ticksDuringBackgroundWork: ticksDuring,
        backgroundWorkRanOffTheLoop: offLoop, shownOnTheLoop: shownOnLoop)
    }
  }
}
