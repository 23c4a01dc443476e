import Testing

@testable import Coroutines
@testable import ExamplesKit

@Suite struct HTTPParserTests {
  private func parse(_ text: String) -> HTTPParseResult { HTTPParser.parse(Array(text.utf8)) }

  private func head(_ text: String) throws -> HTTPRequestHead {
    guard case .complete(let head) = parse(text) else {
      Issue.record("not a whole head: \(parse(text)) for \(text.debugDescription)")
      throw WalkthroughCheckFailed("not parsed")
    }
    return head
  }

  @Test func aGetIsParsedInPlace() throws {
    let text = "GET /index.html?x=1 HTTP/1.1\r\nHost: localhost\r\n\r\nGET / HTTP/1.1\r\n"
    let parsed = try head(text)
    let bytes = Array(text.utf8)
    #expect(parsed.method == .get)
    #expect(String(decoding: bytes[parsed.target], as: UTF8.self) == "/index.html?x=1")
    #expect(
      String(decoding: bytes[parsed.target.lowerBound..<parsed.pathEnd], as: UTF8.self)
        == "/index.html")
    #expect(parsed.minorVersion == 1)
    #expect(parsed.keepAlive)
    #expect(parsed.contentLength == 0)
    // The head ends after its blank line; what follows is the next request's.
    #expect(parsed.length == "GET /index.html?x=1 HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8.count)
  }

  @Test func methodsAreTokensAndCaseSensitive() throws {
    #expect(try head("HEAD / HTTP/1.1\r\n\r\n").method == .head)
    #expect(try head("POST / HTTP/1.1\r\n\r\n").method == .other)
    #expect(try head("get / HTTP/1.1\r\n\r\n").method == .other)
  }

  @Test func everyTruncationOfAValidHeadIsIncomplete() {
    let text =
      "POST /a?b HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\nConnection: keep-alive\r\n\r\n"
    let bytes = Array(text.utf8)
    for length in 0..<bytes.count {
      #expect(
        HTTPParser.parse(Array(bytes[..<length])) == .incomplete, "cut after \(length) bytes")
    }
    guard case .complete(let whole) = HTTPParser.parse(bytes) else {
      Issue.record("the whole head was not parsed")
      return
    }
    #expect(whole.contentLength == 12)
    #expect(whole.length == bytes.count)
  }

  @Test(arguments: [
    "GET /\r\n\r\n",  // no version
    "GET  / HTTP/1.1\r\n\r\n",  // two spaces
    " / HTTP/1.1\r\n\r\n",  // no method
    "G@T / HTTP/1.1\r\n\r\n",  // not a token
    "GET / HTTX/1.1\r\n\r\n",
    "GET / HTTP/1.1x\r\n\r\n",
    "GET / HTTP/1.\r\n\r\n",
    "GET / HTTP/1.1\rX\r\n\r\n",  // a CR without its LF
    "GET /\u{01} HTTP/1.1\r\n\r\n",  // a control character in the target
    "\u{16}\u{03}\u{01}\u{02}\u{00}",  // a TLS hello sent to plain HTTP
  ])
  func aMalformedRequestLineIs400(_ text: String) {
    #expect(parse(text) == .invalid(.badRequest))
  }

  @Test func aMalformedRequestLineIsRefusedBeforeItEnds() {
    // No need to wait for the end of the line to know it is wrong.
    #expect(parse("GET / HTTZ") == .invalid(.badRequest))
    #expect(parse("G\u{00}") == .invalid(.badRequest))
  }

  @Test func anotherVersionIs505() {
    #expect(parse("GET / HTTP/2.0\r\n\r\n") == .invalid(.versionNotSupported))
    #expect(parse("GET / HTTP/0.9\r\n\r\n") == .invalid(.versionNotSupported))
  }

  @Test(arguments: [
    "Host : x",  // a space before the colon
    " folded",  // a folded line
    "Host: a\u{00}b",  // a control character in the value
    ": empty-name",
    "Content-Length: 1x",
    "Content-Length: -1",
    "Content-Length: ",
    "Content-Length: 99999999999999999999",
  ])
  func aMalformedHeaderIs400(_ line: String) {
    #expect(parse("GET / HTTP/1.1\r\nHost: x\r\n\(line)\r\n\r\n") == .invalid(.badRequest))
  }

  @Test func contentLengthIsReadWhateverTheNamesCase() throws {
    #expect(try head("POST / HTTP/1.1\r\ncontent-LENGTH:  42 \r\n\r\n").contentLength == 42)
    // The same length twice is one length; two different ones could be read two ways.
    #expect(
      try head("POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n").contentLength
        == 3)
    #expect(
      parse("POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n")
        == .invalid(.badRequest))
  }

  @Test func aTransferEncodingIsRefused() {
    #expect(
      parse("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n") == .invalid(.notImplemented))
    // Beside a Content-Length, it is the request smuggling case.
    #expect(
      parse("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n")
        == .invalid(.badRequest))
  }

  @Test func keepAliveFollowsTheVersionAndTheConnectionHeader() throws {
    #expect(try head("GET / HTTP/1.1\r\n\r\n").keepAlive)
    #expect(try !head("GET / HTTP/1.1\r\nConnection: close\r\n\r\n").keepAlive)
    #expect(try !head("GET / HTTP/1.1\r\nConnection: Upgrade, CLOSE\r\n\r\n").keepAlive)
    #expect(try !head("GET / HTTP/1.0\r\n\r\n").keepAlive)
    #expect(try head("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").keepAlive)
    #expect(try head("GET / HTTP/1.0\r\nconnection: upgrade ,keep-alive\r\n\r\n").keepAlive)
    #expect(try !head("GET / HTTP/1.0\r\nConnection: keep-alived\r\n\r\n").keepAlive)
  }

  @Test func bareLineFeedsAndLeadingBlankLinesAreAccepted() throws {
    let parsed = try head("\r\n\nGET / HTTP/1.0\nConnection: keep-alive\n\n")
    #expect(parsed.keepAlive)
    #expect(parsed.length == "\r\n\nGET / HTTP/1.0\nConnection: keep-alive\n\n".utf8.count)
  }

  @Test func anOversizedHeadIsParsedAndLeftToTheServerToBound() throws {
    // The parser has no limit of its own: the server's 8 KiB buffer is the limit (431).
    let long = String(repeating: "a", count: 100_000)
    let parsed = try head("GET / HTTP/1.1\r\nX-Long: \(long)\r\n\r\n")
    #expect(parsed.length > 100_000)
    #expect(parse("GET / HTTP/1.1\r\nX-Long: \(long)") == .incomplete)
  }

  @Test func damagedHeadsGetTheSameVerdictWhateverArrivesAfterThem() {
    // A verdict on some bytes never changes when more arrive: a whole head stays the same
    // head, a refusal the same refusal; and a head never claims bytes it was not given. Each
    // prefix is parsed in an array of exactly its size, so an out-of-bounds read shows under
    // AddressSanitizer.
    var random = SplitMix64(seed: 38)
    let valid = Array(
      "POST /a?b HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc".utf8)
    let alphabet = Array(" \r\n:/?.,-HTPGE01aA\t\u{00}\u{7F}\u{FF}".utf8)
    for round in 0..<3000 {
      var bytes = valid
      for _ in 0...random.index(below: 3) {
        let index = random.index(below: bytes.count)
        let byte = alphabet[random.index(below: alphabet.count)]
        switch random.index(below: 3) {
        case 0: bytes[index] = byte
        case 1: bytes.remove(at: index)
        default: bytes.insert(byte, at: index)
        }
      }
      let whole = HTTPParser.parse(bytes)
      let cut = random.index(below: bytes.count + 1)
      let part = HTTPParser.parse(Array(bytes[..<cut]))
      switch part {
      case .incomplete: break
      case .complete(let head):
        #expect(head.length <= cut && head.target.upperBound <= cut, "round \(round)")
        #expect(whole == part, "round \(round): \(bytes)")
      case .invalid:
        #expect(whole == part, "round \(round): \(bytes)")
      }
    }
  }

  @Test func nothingIsIncomplete() {
    #expect(HTTPParser.parse([]) == .incomplete)
    #expect(parse("\r\n") == .incomplete)
  }
}
