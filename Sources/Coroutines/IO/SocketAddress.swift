import Dispatch
import Foundation

/// An IPv4 or IPv6 socket address, as the kernel takes it.
struct SocketAddress: Sendable {
  private var storage = sockaddr_storage()
  private(set) var length: socklen_t = 0

  var family: Int32 { Int32(storage.ss_family) }

  /// The address of `host`, a numeric IPv4 or IPv6 literal, with `port`; nil for anything else.
  init?(literal host: String, port: UInt16) {
    var v4 = sockaddr_in()
    if inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
      v4.sin_family = sa_family_t(AF_INET)
      v4.sin_port = port.bigEndian
      self.init(copying: &v4)
      return
    }
    var v6 = sockaddr_in6()
    // A zone (`fe80::1%eth0`) is left to the resolver.
    if inet_pton(AF_INET6, host, &v6.sin6_addr) == 1 {
      v6.sin6_family = sa_family_t(AF_INET6)
      v6.sin6_port = port.bigEndian
      self.init(copying: &v6)
      return
    }
    return nil
  }

  private init<Address>(copying address: inout Address) {
    withUnsafeMutableBytes(of: &storage) { target in
      withUnsafeBytes(of: &address) { target.copyMemory(from: $0) }
    }
    length = socklen_t(MemoryLayout<Address>.size)
  }

  /// Copies the address `pointer` points to (`length` bytes, at most a `sockaddr_storage`).
  init(_ pointer: UnsafePointer<sockaddr>, length: socklen_t) {
    let count = min(Int(length), MemoryLayout<sockaddr_storage>.size)
    withUnsafeMutableBytes(of: &storage) {
      $0.copyMemory(from: UnsafeRawBufferPointer(start: pointer, count: count))
    }
    self.length = socklen_t(count)
  }

  /// Calls `body` with the address as the kernel takes it.
  func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws -> R) rethrows -> R {
    try withUnsafeBytes(of: storage) {
      try body($0.baseAddress!.assumingMemoryBound(to: sockaddr.self), length)
    }
  }

  /// The port of the address.
  var port: UInt16 {
    withUnsafeBytes(of: storage) { bytes in
      family == AF_INET6
        ? UInt16(bigEndian: bytes.load(as: sockaddr_in6.self).sin6_port)
        : UInt16(bigEndian: bytes.load(as: sockaddr_in.self).sin_port)
    }
  }

  /// The local address of socket `fd`.
  static func local(of fd: Int32) throws -> SocketAddress {
    var storage = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    let result = withUnsafeMutablePointer(to: &storage) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    if result != 0 { throw lastPOSIXError() }
    return withUnsafePointer(to: &storage) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { SocketAddress($0, length: length) }
    }
  }
}

/// The error of a name that could not be resolved: `getaddrinfo`'s code and its text.
public struct CoResolutionError: Error, Equatable, CustomStringConvertible {
  /// The host name that was looked up.
  public let host: String
  /// `getaddrinfo`'s error code (`EAI_NONAME`, …).
  public let code: Int32

  /// What went wrong, in `gai_strerror`'s words.
  public var description: String {
    "could not resolve \"\(host)\": \(String(cString: gai_strerror(code)))"
  }
}

/// The addresses of `host` for TCP on `port`, in the resolver's order: a literal at once, a name
/// through `getaddrinfo`. Inside a coroutine the resolver runs on a Dispatch thread while the
/// coroutine waits, so a loop's thread never blocks on it; outside one it runs on the calling
/// thread.
func resolveTCP(host: String, port: UInt16, passive: Bool) throws -> [SocketAddress] {
  if let literal = SocketAddress(literal: host, port: port) { return [literal] }
  guard Coroutine.current != nil else {
    return try lookUp(host: host, port: port, passive: passive).get()
  }
  return try co_await { (done: @escaping @Sendable (Result<[SocketAddress], any Error>) -> Void) in
    DispatchQueue.global().async { done(lookUp(host: host, port: port, passive: passive)) }
  }
}

/// `getaddrinfo` for TCP, blocking the calling thread.
private func lookUp(host: String, port: UInt16, passive: Bool) -> Result<
  [SocketAddress], any Error
> {
  var hints = addrinfo()
  hints.ai_family = AF_UNSPEC
  hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
  hints.ai_protocol = Int32(IPPROTO_TCP)
  hints.ai_flags = passive ? AI_PASSIVE : AI_ADDRCONFIG
  var list: UnsafeMutablePointer<addrinfo>?
  let code = getaddrinfo(host, String(port), &hints, &list)
  guard code == 0 else {
    if code == EAI_SYSTEM { return .failure(lastPOSIXError()) }
    return .failure(CoResolutionError(host: host, code: code))
  }
  defer { freeaddrinfo(list) }
  var addresses: [SocketAddress] = []
  var entry = list
  while let info = entry?.pointee {
    if let address = info.ai_addr, info.ai_family == AF_INET || info.ai_family == AF_INET6 {
      addresses.append(SocketAddress(address, length: info.ai_addrlen))
    }
    entry = info.ai_next
  }
  if addresses.isEmpty { return .failure(CoResolutionError(host: host, code: EAI_NONAME)) }
  return .success(addresses)
}
