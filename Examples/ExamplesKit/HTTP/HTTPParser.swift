import Foundation

/// The status codes the HTTP server answers with.
public enum HTTPStatus: Int, Sendable {
  /// The request was answered.
  case ok = 200
  /// A malformed request line or header.
  case badRequest = 400
  /// No such path.
  case notFound = 404
  /// A method other than GET or HEAD.
  case methodNotAllowed = 405
  /// The request's head (request line and headers) is over the limit.
  case headerFieldsTooLarge = 431
  /// A `Transfer-Encoding` (chunked bodies are not supported).
  case notImplemented = 501
  /// An HTTP version other than 1.0 and 1.1.
  case versionNotSupported = 505
}

/// What the parser found in the head of one request: positions in the bytes it was given, and
/// the few headers the server acts on. No strings: the server compares bytes in place.
public struct HTTPRequestHead: Equatable, Sendable {
  /// The request's method, as far as the server tells them apart.
  public enum Method: Equatable, Sendable {
    /// `GET`.
    case get
    /// `HEAD`: a `GET` without the body.
    case head
    /// Any other token.
    case other
  }

  /// The method.
  public var method: Method
  /// Where the request target (`/`, `/index.html?x=1`) lies in the parsed bytes.
  public var target: Range<Int>
  /// Where the target's path (the target before any `?`) ends.
  public var pathEnd: Int
  /// 0 for HTTP/1.0, 1 for HTTP/1.1.
  public var minorVersion: Int
  /// True when the connection stays open after the response: HTTP/1.1 unless the request says
  /// `Connection: close`, HTTP/1.0 only if it says `Connection: keep-alive`.
  public var keepAlive: Bool
  /// The body's length in bytes (`Content-Length`; 0 without one).
  public var contentLength: Int
  /// How many bytes the head took, up to and including the blank line that ends it.
  public var length: Int
}

/// The parser's verdict on the bytes received so far.
public enum HTTPParseResult: Equatable, Sendable {
  /// The bytes hold a whole head.
  case complete(HTTPRequestHead)
  /// The bytes are a valid beginning of a head: read more.
  case incomplete
  /// The bytes cannot be a valid head: answer with this status and close.
  case invalid(HTTPStatus)
}

/// An HTTP/1.x request head parser that scans the bytes in place, once, and makes no string
/// and no allocation: a keep-alive request costs a pass over its bytes.
///
/// It accepts what RFC 9112 asks a server to accept, lines ending in CRLF or a bare LF
/// included, and refuses what could be read two ways: a header name followed by a space, a
/// folded line, two different `Content-Length`s, a `Content-Length` beside a
/// `Transfer-Encoding` (the request smuggling cases).
public enum HTTPParser {
  /// Parses the head at the start of `bytes`.
  public static func parse(_ bytes: UnsafeRawBufferPointer) -> HTTPParseResult {
    guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), !bytes.isEmpty
    else { return .incomplete }
    var cursor = Cursor(base: base, count: bytes.count)
    return cursor.head()
  }

  /// Parses the head at the start of `bytes`.
  public static func parse(_ bytes: [UInt8]) -> HTTPParseResult {
    bytes.withUnsafeBytes { parse($0) }
  }
}

/// The scan itself: a position in the bytes, moved forward as each part is recognised.
private struct Cursor {
  let base: UnsafePointer<UInt8>
  let count: Int
  var position = 0

  init(base: UnsafePointer<UInt8>, count: Int) {
    self.base = base
    self.count = count
  }

  /// The byte at `index`, which the caller has checked is below `count`.
  @inline(__always) func byte(_ index: Int) -> UInt8 { base[index] }

  mutating func head() -> HTTPParseResult {
    // RFC 9112 §2.2: a server should ignore at least one empty line before the request line.
    while position < count, byte(position) == .cr || byte(position) == .lf { position += 1 }
    // The request line: METHOD SP TARGET SP HTTP/1.x CRLF.
    let methodStart = position
    while position < count, isToken(byte(position)) { position += 1 }
    guard position < count else { return .incomplete }
    guard byte(position) == .space, position > methodStart else { return .invalid(.badRequest) }
    let method = Self.method(base + methodStart, position - methodStart)
    position += 1
    let targetStart = position
    var pathEnd = -1
    while position < count, byte(position) > .space, byte(position) != .delete {
      if byte(position) == .question, pathEnd < 0 { pathEnd = position }
      position += 1
    }
    guard position < count else { return .incomplete }
    guard byte(position) == .space, position > targetStart else { return .invalid(.badRequest) }
    let target = targetStart..<position
    if pathEnd < 0 { pathEnd = position }
    position += 1
    let minor: Int
    switch version() {
    case .minor(let value): minor = value
    case .unsupported: return .invalid(.versionNotSupported)
    case .invalid: return .invalid(.badRequest)
    case .incomplete: return .incomplete
    }
    switch endOfLine() {
    case nil: return .incomplete
    case false?: return .invalid(.badRequest)
    case true?: break
    }
    var fields = Fields(minorVersion: minor)
    while true {
      guard position < count else { return .incomplete }
      if byte(position) == .lf || byte(position) == .cr {
        switch endOfLine() {
        case nil: return .incomplete
        case false?: return .invalid(.badRequest)
        case true?:
          if let status = fields.refusal { return .invalid(status) }
          return .complete(
            HTTPRequestHead(
              method: method, target: target, pathEnd: pathEnd, minorVersion: minor,
              keepAlive: fields.keepAlive, contentLength: fields.contentLength ?? 0,
              length: position))
        }
      }
      if let verdict = field(&fields) { return verdict }
    }
  }

  /// What the request line's last part says.
  enum Version {
    /// `HTTP/1.0` (0) or `HTTP/1.1` (1).
    case minor(Int)
    /// A well-formed version the server does not speak (`HTTP/2.0`): 505.
    case unsupported
    /// Something else: 400.
    case invalid
    /// A valid beginning, cut short.
    case incomplete
  }

  /// Consumes `HTTP/D.D`.
  mutating func version() -> Version {
    let prefix: StaticString = "HTTP/"
    for index in 0..<prefix.utf8CodeUnitCount {
      guard position < count else { return .incomplete }
      guard byte(position) == prefix.utf8Start[index] else { return .invalid }
      position += 1
    }
    for index in 0..<3 {
      guard position + index < count else { return .incomplete }
      let digit = byte(position + index)
      guard index == 1 ? digit == .dot : isDigit(digit) else { return .invalid }
    }
    let major = byte(position)
    let minor = byte(position + 2)
    position += 3
    return major == .one && (minor == .zero || minor == .one)
      ? .minor(Int(minor - .zero)) : .unsupported
  }

  /// Consumes CRLF or LF: true if it was there, false for any other byte, nil when the bytes
  /// end first.
  mutating func endOfLine() -> Bool? {
    guard position < count else { return nil }
    if byte(position) == .cr {
      guard position + 1 < count else { return nil }
      guard byte(position + 1) == .lf else { return false }
      position += 2
      return true
    }
    guard byte(position) == .lf else { return false }
    position += 1
    return true
  }

  /// One header line, `name: value`; nil once it is consumed, else the verdict on the head.
  mutating func field(_ fields: inout Fields) -> HTTPParseResult? {
    let nameStart = position
    while position < count, isToken(byte(position)) { position += 1 }
    guard position < count else { return .incomplete }
    // A name must be followed by the colon at once: `Host : x` and a folded line (a line that
    // starts with a space) are refused, as RFC 9112 §5.1 and §5.2 ask.
    guard byte(position) == .colon, position > nameStart else { return .invalid(.badRequest) }
    let nameLength = position - nameStart
    position += 1
    while position < count, byte(position) == .space || byte(position) == .tab { position += 1 }
    let valueStart = position
    var valueEnd = position
    while position < count {
      let current = byte(position)
      if current == .cr || current == .lf { break }
      // Field values are visible characters, spaces and tabs; a control character is refused.
      guard current >= .space || current == .tab, current != .delete else {
        return .invalid(.badRequest)
      }
      position += 1
      if current != .space && current != .tab { valueEnd = position }
    }
    switch endOfLine() {
    case nil: return .incomplete
    case false?: return .invalid(.badRequest)
    case true?: break
    }
    fields.note(
      name: base + nameStart, nameLength, value: base + valueStart, valueEnd - valueStart)
    return nil
  }

  static func method(_ start: UnsafePointer<UInt8>, _ length: Int) -> HTTPRequestHead.Method {
    if length == 3, start[0] == .g, start[1] == .e, start[2] == .t { return .get }
    // Methods are case-sensitive (RFC 9110 §9.1): `get` is not GET.
    if length == 4, start[0] == .h, start[1] == .e, start[2] == .a, start[3] == .d { return .head }
    return .other
  }
}

/// The headers the server acts on, as the parser meets them.
private struct Fields {
  let minorVersion: Int
  var contentLength: Int?
  var transferEncoding = false
  var close = false
  var keepAliveAsked = false
  /// Why the head is refused although well-formed, if it is.
  var refusal: HTTPStatus? {
    if transferEncoding { return contentLength == nil ? .notImplemented : .badRequest }
    return badLength ? .badRequest : nil
  }
  var badLength = false

  init(minorVersion: Int) { self.minorVersion = minorVersion }

  var keepAlive: Bool { minorVersion == 1 ? !close : keepAliveAsked && !close }

  mutating func note(
    name: UnsafePointer<UInt8>, _ nameLength: Int, value: UnsafePointer<UInt8>, _ valueLength: Int
  ) {
    // Only three names matter; their lengths tell them apart before any byte is compared.
    switch nameLength {
    case 14 where equalsIgnoringCase(name, nameLength, "content-length"):
      guard let length = decimal(value, valueLength), contentLength ?? length == length else {
        badLength = true
        return
      }
      contentLength = length
    case 17 where equalsIgnoringCase(name, nameLength, "transfer-encoding"):
      transferEncoding = true
    case 10 where equalsIgnoringCase(name, nameLength, "connection"):
      // A comma-separated list of options: `close`, `keep-alive`, `Upgrade`, ...
      var start = 0
      while start < valueLength {
        var end = start
        while end < valueLength, value[end] != .comma { end += 1 }
        var first = start
        var last = end
        while first < last, value[first] == .space || value[first] == .tab { first += 1 }
        while last > first, value[last - 1] == .space || value[last - 1] == .tab { last -= 1 }
        if equalsIgnoringCase(value + first, last - first, "close") { close = true }
        if equalsIgnoringCase(value + first, last - first, "keep-alive") { keepAliveAsked = true }
        start = end + 1
      }
    default: break
    }
  }
}

/// The digits of `bytes` as a number; nil when empty, not all digits, or past 2^53 (no body
/// here is near that; the limit keeps the sum from overflowing).
private func decimal(_ bytes: UnsafePointer<UInt8>, _ length: Int) -> Int? {
  guard length > 0, length <= 15 else { return nil }
  var value = 0
  for index in 0..<length {
    guard isDigit(bytes[index]) else { return nil }
    value = value * 10 + Int(bytes[index] - .zero)
  }
  return value
}

/// True when the `length` bytes at `bytes` spell `lowercase` in any case. `lowercase` is a
/// literal, compared through its UTF-8 without making a string.
@inline(__always)
private func equalsIgnoringCase(
  _ bytes: UnsafePointer<UInt8>, _ length: Int, _ lowercase: StaticString
) -> Bool {
  guard length == lowercase.utf8CodeUnitCount else { return false }
  let expected = lowercase.utf8Start
  for index in 0..<length {
    // ASCII letters differ from their capitals by one bit (0x20); setting it lowercases them
    // and leaves `-` (0x2D) as it is.
    if bytes[index] | 0x20 != expected[index] { return false }
  }
  return true
}

@inline(__always) private func isDigit(_ byte: UInt8) -> Bool { byte &- .zero < 10 }

/// True for a `tchar` of RFC 9110 §5.6.2: the characters of methods and header names.
@inline(__always) private func isToken(_ byte: UInt8) -> Bool {
  // One bit per character below 128: digits, letters and !#$%&'*+-.^_`|~.
  let low: UInt64 = 0x03FF_6CFA_0000_0000
  let high: UInt64 = 0x57FF_FFFF_C7FF_FFFE
  return byte < 64 ? (low >> byte) & 1 == 1 : byte < 128 && (high >> (byte - 64)) & 1 == 1
}

extension UInt8 {
  fileprivate static var lf: UInt8 { UInt8(ascii: "\n") }
  fileprivate static var cr: UInt8 { UInt8(ascii: "\r") }
  fileprivate static var space: UInt8 { UInt8(ascii: " ") }
  fileprivate static var tab: UInt8 { UInt8(ascii: "\t") }
  fileprivate static var delete: UInt8 { 0x7F }
  fileprivate static var colon: UInt8 { UInt8(ascii: ":") }
  fileprivate static var comma: UInt8 { UInt8(ascii: ",") }
  fileprivate static var question: UInt8 { UInt8(ascii: "?") }
  fileprivate static var slash: UInt8 { UInt8(ascii: "/") }
  fileprivate static var dot: UInt8 { UInt8(ascii: ".") }
  fileprivate static var zero: UInt8 { UInt8(ascii: "0") }
  fileprivate static var one: UInt8 { UInt8(ascii: "1") }
  fileprivate static var g: UInt8 { UInt8(ascii: "G") }
  fileprivate static var e: UInt8 { UInt8(ascii: "E") }
  fileprivate static var t: UInt8 { UInt8(ascii: "T") }
  fileprivate static var h: UInt8 { UInt8(ascii: "H") }
  fileprivate static var a: UInt8 { UInt8(ascii: "A") }
  fileprivate static var d: UInt8 { UInt8(ascii: "D") }
  fileprivate static var p: UInt8 { UInt8(ascii: "P") }
}
