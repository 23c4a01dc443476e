import Glibc
import NIOCore
import NIOPosix

// SwiftNIO's echo server on one event loop, the echo benchmark's baseline:
// `echo-nio [port]` (0 or none: the system picks), prints `port=N` once listening, runs until
// killed. Each connection's pipeline is one handler that writes back what it reads and flushes
// when a read burst ends, as SwiftNIO's own echo example does.

/// Writes every buffer it reads back to its channel; flushes once per read burst.
final class EchoHandler: ChannelInboundHandler {
  typealias InboundIn = ByteBuffer
  typealias OutboundOut = ByteBuffer

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    context.write(data, promise: nil)
  }

  func channelReadComplete(context: ChannelHandlerContext) {
    context.flush()
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
  .childChannelInitializer { channel in
    channel.eventLoop.makeCompletedFuture {
      try channel.pipeline.syncOperations.addHandler(EchoHandler())
    }
  }
let server = try bootstrap.bind(host: "127.0.0.1", port: port).wait()
print("port=\(server.localAddress?.port ?? 0)")
fflush(nil)  // every stream: the benchmark waits for this line
try server.closeFuture.wait()
