// swift-tools-version:6.0
// The benchmark executable: `make bench` (release builds only). Not part of `make test` or CI.
import PackageDescription

let package = Package(
  name: "swift-coroutines-benchmarks",
  dependencies: [
    .package(name: "swift-coroutines", path: "..")
  ],
  targets: [
    .target(
      name: "CBaselines",
      path: "Sources/CBaselines"
    ),
    .executableTarget(
      name: "bench",
      dependencies: [
        "CBaselines",
        .product(name: "Coroutines", package: "swift-coroutines"),
      ],
      path: "Sources/bench"
    ),
  ],
  swiftLanguageModes: [.v6]
)
