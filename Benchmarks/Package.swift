// swift-tools-version:6.0
// The benchmark executable: `make bench` (release builds only). Not part of `make test` or CI.
// The echo section runs three more executables of this package as separate processes: the load
// generator (C) and the two Swift echo servers, ours and SwiftNIO's.
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
        "CBaselines", "echoload", "echo-coroutines", "echo-nio",
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
  ],
  swiftLanguageModes: [.v6]
)
