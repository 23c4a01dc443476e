import Coroutines
import Foundation

/// Where the feed refresh gets its documents: the stub client, or real HTTP over loopback.
public protocol FeedHTTPClient: Sendable {
  /// Fetches `url` and calls `completion` once with the body or an error.
  func get(_ url: String, completion: @escaping @Sendable (Result<Data, any Error>) -> Void)
}

extension StubHTTPClient: FeedHTTPClient {}

/// Why a live request failed.
public struct LiveHTTPError: Error, Equatable, CustomStringConvertible {
  /// What went wrong.
  public let description: String
}

/// An HTTP/1.1 client over real loopback sockets, written as sequential coroutine code. It
/// sends every request to the in-process server on `port`, whatever the URL's host.
public struct LiveHTTPClient: FeedHTTPClient {
  /// The port of the server.
  public let port: UInt16
  /// The server's host: 127.0.0.1 unless given (a simulated host's name, say).
  public let host: String

  /// A client of the server on `host`'s `port`.
  public init(port: UInt16, host: String = "127.0.0.1") {
    self.port = port
    self.host = host
  }

  /// Fetches `url` in a coroutine of its own on the caller's loop, and calls `completion` with
  /// the outcome: the same shape as the stub, so the same refresh code uses either.
  public func get(_ url: String, completion: @escaping @Sendable (Result<Data, any Error>) -> Void)
  {
    co_launch(detached: true) { completion(Result { try fetch(url) }) }
  }

  /// Fetches `url`: connect, send the request, read the status line, the headers and a body of
  /// `Content-Length` bytes. Must run in a coroutine.
  public func fetch(_ url: String) throws -> Data {
    let stream = try CoTCPStream.connect(host: host, port: port, timeout: 5)
    defer { stream.close() }
    try stream.write(
      Array("GET \(url) HTTP/1.1\r\nHost: feeds.example.org\r\nConnection: close\r\n\r\n".utf8),
      timeout: 5)
    var reader = HTTPReader(stream)
    let head = try reader.head()
    guard let status = head.first?.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
    else {
      throw LiveHTTPError(description: "\(url): no status line")
    }
    guard status == 200 else { throw LiveHTTPError(description: "\(url): HTTP \(status)") }
    return Data(try reader.body(length: HTTPReader.contentLength(head)))
  }
}

/// A small HTTP/1.1 server over real loopback sockets, every connection a coroutine: it serves
/// `routes` (the request target is the URL; nil is a 404) and closes each connection after its
/// response.
public struct LiveHTTPServer: Sendable {
  /// What the server answers for a URL.
  public let routes: @Sendable (String) -> Data?

  /// A server of `routes`.
  public init(routes: @escaping @Sendable (String) -> Data?) { self.routes = routes }

  /// Accepts and answers connections until `listener` is closed.
  public func serve(on listener: CoTCPListener) throws {
    while true {
      let connection: CoTCPStream
      do {
        connection = try listener.accept()
      } catch let error as POSIXError where error.code == .EBADF {
        return
      }
      co_launch(detached: true) {
        defer { connection.close() }
        try answer(connection)
      }
    }
  }

  private func answer(_ connection: CoTCPStream) throws {
    var reader = HTTPReader(connection)
    let request = try reader.head().first?.split(separator: " ") ?? []
    guard request.count == 3, request[0] == "GET" else {
      try connection.write(Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n".utf8))
      return
    }
    guard let body = routes(String(request[1])) else {
      try connection.write(Array("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".utf8))
      return
    }
    try connection.write(
      Array(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n"
          .utf8)
        + body)
  }
}

/// Reads an HTTP/1.1 message from a stream: the head, line by line, then a body.
struct HTTPReader {
  private let stream: CoTCPStream
  private var buffered: [UInt8] = []

  init(_ stream: CoTCPStream) { self.stream = stream }

  /// The lines of the head (the start line first), up to the blank line that ends it.
  mutating func head() throws -> [String] {
    let end: [UInt8] = Array("\r\n\r\n".utf8)
    while true {
      if let range = firstRange(of: end) {
        let head = String(decoding: buffered[..<range], as: UTF8.self)
        buffered.removeFirst(range + end.count)
        return head.components(separatedBy: "\r\n")
      }
      guard buffered.count < 64 << 10 else { throw LiveHTTPError(description: "head too long") }
      let bytes = try stream.read(upTo: 4096, timeout: 5)
      if bytes.isEmpty { throw LiveHTTPError(description: "connection closed in the head") }
      buffered += bytes
    }
  }

  /// The next `length` bytes.
  mutating func body(length: Int) throws -> [UInt8] {
    while buffered.count < length {
      let bytes = try stream.read(upTo: length - buffered.count, timeout: 5)
      if bytes.isEmpty { throw LiveHTTPError(description: "connection closed in the body") }
      buffered += bytes
    }
    defer { buffered.removeFirst(length) }
    return Array(buffered[..<length])
  }

  /// The `Content-Length` of a head, 0 when it has none.
  static func contentLength(_ head: [String]) -> Int {
    for line in head.dropFirst() {
      let parts = line.split(separator: ":", maxSplits: 1)
      if parts.count == 2, parts[0].lowercased() == "content-length" {
        return Int(parts[1].trimmingCharacters(in: .whitespaces)) ?? 0
      }
    }
    return 0
  }

  private func firstRange(of pattern: [UInt8]) -> Int? {
    guard buffered.count >= pattern.count else { return nil }
    for start in 0...(buffered.count - pattern.count)
    where buffered[start..<start + pattern.count].elementsEqual(pattern) {
      return start
    }
    return nil
  }
}
