import Glibc
import NIOCore
import NIOHTTP1
import NIOPosix

// SwiftNIO's HTTP/1.1 server on one event loop, the HTTP benchmark's baseline:
// `http-nio [port]` (0 or none: the system picks), prints `port=N` once listening, runs until
// killed. NIOHTTP1's parser and encoder with pipelining support, as NIO's own HTTP server
// example configures them; `GET /` answers `Hello, World!` as text/plain with its
// Content-Length, any other path 404, the same bytes the other servers send.

/// Answers each request head once its end arrives; flushes once per read burst.
final class HelloHandler: ChannelInboundHandler {
  typealias InboundIn = HTTPServerRequestPart
  typealias OutboundOut = HTTPServerResponsePart

  private var keepAlive = true
  private var isRoot = true
  private var pending = false
  private let hello: ByteBuffer
  private let notFound: ByteBuffer

  init(allocator: ByteBufferAllocator) {
    hello = allocator.buffer(string: "Hello, World!")
    notFound = allocator.buffer(string: "Not Found")
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    switch unwrapInboundIn(data) {
    case .head(let head):
      keepAlive = head.isKeepAlive
      isRoot = head.uri == "/" || head.uri.hasPrefix("/?")
    case .body:
      break
    case .end:
      let body = isRoot ? hello : notFound
      var headers = HTTPHeaders()
      headers.add(name: "Content-Type", value: "text/plain")
      headers.add(name: "Content-Length", value: String(body.readableBytes))
      if !keepAlive { headers.add(name: "Connection", value: "close") }
      let head = HTTPResponseHead(
        version: .http1_1, status: isRoot ? .ok : .notFound, headers: headers)
      context.write(wrapOutboundOut(.head(head)), promise: nil)
      context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
      if keepAlive {
        context.write(wrapOutboundOut(.end(nil)), promise: nil)
        pending = true
      } else {
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
          bound.value.close(promise: nil)
        }
      }
    }
  }

  func channelReadComplete(context: ChannelHandlerContext) {
    if pending {
      pending = false
      context.flush()
    }
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    context.close(promise: nil)
  }
}

let arguments = CommandLine.arguments
let port = arguments.count > 1 ? Int(arguments[1]) ?? 0 : 0
let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
let bootstrap = ServerBootstrap(group: group)
  .serverChannelOption(.backlog, value: 4096)
  .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
  .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
  .childChannelOption(.maxMessagesPerRead, value: 16)
  .childChannelInitializer { channel in
    channel.eventLoop.makeCompletedFuture {
      try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
      try channel.pipeline.syncOperations.addHandler(HelloHandler(allocator: channel.allocator))
    }
  }
let server = try bootstrap.bind(host: "127.0.0.1", port: port).wait()
print("port=\(server.localAddress?.port ?? 0)")
fflush(nil)  // every stream: the benchmark waits for this line
try server.closeFuture.wait()
