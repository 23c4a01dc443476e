import Coroutines
import Foundation

/// One HTTP/1.1 response as a client read it.
public struct HTTPClientResponse: Equatable, Sendable {
  /// The status code (200, 404, ...).
  public var status: Int
  /// The headers, names lowercased.
  public var headers: [String: String]
  /// The body.
  public var body: String
}

/// A client connection for the walkthrough and the tests: sends raw request bytes and reads
/// responses one at a time, each framed by its `Content-Length`. Must run in a coroutine.
public final class HTTPTestClient {
  /// The connection; closed by ``close()``.
  public let stream: CoTCPStream
  private var buffer: [UInt8] = []
  /// Seconds every read and write may take.
  public let timeout: Double

  /// Connects to the server on 127.0.0.1:`port`.
  public init(port: UInt16, timeout: Double = 5) throws {
    stream = try CoTCPStream.connect(host: "127.0.0.1", port: port, timeout: timeout)
    self.timeout = timeout
  }

  /// Sends `text` as it is (`\r\n` line ends are the caller's).
  public func send(_ text: String) throws {
    try stream.write(Array(text.utf8), timeout: timeout)
  }

  /// Reads the next response; nil when the server closed the connection first.
  public func response(headOnly: Bool = false) throws -> HTTPClientResponse? {
    let separator = Array("\r\n\r\n".utf8)
    var headEnd: Int?
    while headEnd == nil {
      headEnd = buffer.indices.dropLast(3).first { buffer[$0..<$0 + 4].elementsEqual(separator) }
      if headEnd == nil, try !fill() { return nil }
    }
    let head = String(decoding: buffer[..<headEnd!], as: UTF8.self)
    var lines = head.components(separatedBy: "\r\n")
    let statusLine = lines.removeFirst().split(separator: " ")
    guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
      throw WalkthroughCheckFailed("not a status line: \(head)")
    }
    var headers: [String: String] = [:]
    for line in lines {
      guard let colon = line.firstIndex(of: ":") else { continue }
      headers[line[..<colon].lowercased()] = line[line.index(after: colon)...]
        .trimmingCharacters(in: .whitespaces)
    }
    buffer.removeFirst(headEnd! + 4)
    let length = headOnly ? 0 : Int(headers["content-length"] ?? "0") ?? 0
    while buffer.count < length {
      guard try fill() else { throw WalkthroughCheckFailed("the body was cut short") }
    }
    let body = String(decoding: buffer[..<length], as: UTF8.self)
    buffer.removeFirst(length)
    return HTTPClientResponse(status: status, headers: headers, body: body)
  }

  /// True when the server closes the connection without sending anything more.
  public func isClosedByServer() throws -> Bool {
    if !buffer.isEmpty { return false }
    do {
      return try !fill()
    } catch let error as POSIXError where error.code == .ECONNRESET {
      return true
    }
  }

  /// Closes the connection.
  public func close() { stream.close() }

  private func fill() throws -> Bool {
    let bytes = try stream.read(upTo: 65536, timeout: timeout)
    buffer += bytes
    return !bytes.isEmpty
  }
}
