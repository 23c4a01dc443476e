import Coroutines
import Foundation

/// Every response the server sends, built once when it starts: answering copies bytes, it
/// formats nothing. Each status comes with and without a body (`HEAD`), and with each of the
/// three `Connection` headers a response may need.
final class HTTPResponses: Sendable {
  /// The `Connection` header a response carries.
  enum Connection: Int, CaseIterable {
    /// None: HTTP/1.1 keeps the connection.
    case none
    /// `keep-alive`: an HTTP/1.0 client asked to keep it.
    case keepAlive
    /// `close`: the server closes it after this response.
    case close
  }

  /// In the order of the table's rows (see ``bytes(_:_:headOnly:)``).
  static let statuses: [HTTPStatus] = [
    .ok, .badRequest, .notFound, .methodNotAllowed, .headerFieldsTooLarge, .notImplemented,
    .versionNotSupported,
  ]

  private let table: [[UInt8]]

  init() {
    var table: [[UInt8]] = []
    for status in Self.statuses {
      for connection in Connection.allCases {
        for headOnly in [false, true] {
          table.append(Array(Self.text(status, connection, headOnly: headOnly).utf8))
        }
      }
    }
    self.table = table
  }

  /// The bytes of one response.
  func bytes(_ status: HTTPStatus, _ connection: Connection, headOnly: Bool) -> [UInt8] {
    let row =
      switch status {
      case .ok: 0
      case .badRequest: 1
      case .notFound: 2
      case .methodNotAllowed: 3
      case .headerFieldsTooLarge: 4
      case .notImplemented: 5
      case .versionNotSupported: 6
      }
    return table[row * 6 + connection.rawValue * 2 + (headOnly ? 1 : 0)]
  }

  private static func text(_ status: HTTPStatus, _ connection: Connection, headOnly: Bool)
    -> String
  {
    let (reason, body): (String, String) =
      switch status {
      case .ok: ("OK", "Hello, World!")
      case .badRequest: ("Bad Request", "Bad Request")
      case .notFound: ("Not Found", "Not Found")
      case .methodNotAllowed: ("Method Not Allowed", "Method Not Allowed")
      case .headerFieldsTooLarge:
        ("Request Header Fields Too Large", "Request Header Fields Too Large")
      case .notImplemented: ("Not Implemented", "Not Implemented")
      case .versionNotSupported: ("HTTP Version Not Supported", "HTTP Version Not Supported")
      }
    var text = "HTTP/1.1 \(status.rawValue) \(reason)\r\n"
    if status == .methodNotAllowed { text += "Allow: GET, HEAD\r\n" }
    text += "Content-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\n"
    switch connection {
    case .none: break
    case .keepAlive: text += "Connection: keep-alive\r\n"
    case .close: text += "Connection: close\r\n"
    }
    return text + "\r\n" + (headOnly ? "" : body)
  }
}

/// The responses a connection has yet to send: pipelined requests are answered with one
/// write, as Go's `bufio.Writer` does.
struct ResponseBuffer: ~Copyable {
  private let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 1)
  private var count = 0
  private let responses: HTTPResponses

  init(_ responses: HTTPResponses) { self.responses = responses }

  deinit { storage.deallocate() }

  /// Adds the answer `status` to a request with head `head`; `closing` when the connection
  /// closes after it (the request asked, or the server is stopping).
  mutating func append(
    _ status: HTTPStatus, _ head: HTTPRequestHead, closing: Bool,
    flushingTo connection: CoTCPStream
  ) throws {
    let header: HTTPResponses.Connection =
      closing ? .close : head.minorVersion == 0 ? .keepAlive : .none
    try append(
      responses.bytes(status, header, headOnly: head.method == .head), flushingTo: connection)
  }

  /// Adds `status` for a request that could not be read, closing the connection.
  mutating func append(_ status: HTTPStatus, closingTo connection: CoTCPStream) throws {
    try append(responses.bytes(status, .close, headOnly: false), flushingTo: connection)
  }

  private mutating func append(_ bytes: [UInt8], flushingTo connection: CoTCPStream) throws {
    if count + bytes.count > storage.count { try flush(to: connection) }
    bytes.withUnsafeBytes { source in
      UnsafeMutableRawBufferPointer(rebasing: storage[count...]).copyMemory(from: source)
    }
    count += bytes.count
  }

  /// Sends what has been added.
  mutating func flush(to connection: CoTCPStream) throws {
    guard count > 0 else { return }
    try connection.write(UnsafeRawBufferPointer(rebasing: storage[..<count]))
    count = 0
  }
}
