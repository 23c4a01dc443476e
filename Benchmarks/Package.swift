// swift-tools-version:6.0
// The benchmark executable: `make bench` (release builds only). Not part of `make test` or CI.
// The echo section runs three more executables of this package as separate processes: the load
// generator (C) and the two Swift echo servers, ours and SwiftNIO's. The HTTP section runs
// SwiftNIO's HTTP server (http-nio), Go's and the root package's `examples http` under wrk.
import PackageDescription

let package = Package(
  name: "swift-coroutines-benchmarks",
  dependencies: [
    .package(name: "swift-coroutines", path: ".."),
    .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
  ],
  targets: [
    .target(
      name: "CBaselines",
      path: "Sources/CBaselines"
    ),
    .executableTarget(
      name: "bench",
      dependencies: [
        "CBaselines", "echoload", "echo-coroutines", "echo-nio", "http-nio",
        .product(name: "Coroutines", package: "swift-coroutines"),
      ],
      path: "Sources/bench"
    ),
    .executableTarget(
      name: "echoload",
      path: "Sources/echoload",
      cSettings: [.unsafeFlags(["-O2"])]
    ),
    .executableTarget(
      name: "echo-coroutines",
      dependencies: [.product(name: "Coroutines", package: "swift-coroutines")],
      path: "Sources/echo-coroutines"
    ),
    .executableTarget(
      name: "echo-nio",
      dependencies: [
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
      ],
      path: "Sources/echo-nio"
    ),
    // The HTTP section's SwiftNIO baseline; ours is the root package's `examples http`.
    .executableTarget(
      name: "http-nio",
      dependencies: [
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOHTTP1", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
      ],
      path: "Sources/http-nio"
    ),
  ],
  swiftLanguageModes: [.v6]
)
