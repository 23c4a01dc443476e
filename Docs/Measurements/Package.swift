// swift-tools-version:6.0
// The micro-measurement behind the cost table of the "Swift Concurrency, both ways" article.
// Release builds only: `swift run -c release concurrency-costs` from this directory. Not part
// of `make test` or CI; no test asserts on time.
import PackageDescription

let package = Package(
  name: "swift-coroutines-docs-measurements",
  dependencies: [
    .package(name: "swift-coroutines", path: "../..")
  ],
  targets: [
    .executableTarget(
      name: "concurrency-costs",
      dependencies: [.product(name: "Coroutines", package: "swift-coroutines")],
      path: "Sources/concurrency-costs"
    )
  ],
  swiftLanguageModes: [.v6]
)
