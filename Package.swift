// swift-tools-version:6.0
import PackageDescription

let package = Package(
  name: "swift-coroutines",
  products: [
    .library(name: "Coroutines", targets: ["Coroutines"])
  ],
  targets: [
    .target(
      name: "CUContext",
      path: "Sources/CUContext"
    ),
    .target(
      name: "CLinux",
      dependencies: ["CUContext"],
      path: "Sources/CLinux"
    ),
    .target(
      name: "Coroutines",
      dependencies: ["CUContext", "CLinux"],
      path: "Sources/Coroutines"
    ),
    .executableTarget(
      name: "examples",
      dependencies: ["ExamplesKit"],
      path: "Examples",
      exclude: ["ExamplesKit"]
    ),
    .target(
      name: "ExamplesKit",
      dependencies: ["Coroutines"],
      path: "Examples/ExamplesKit"
    ),
    // Commits one programming error per run, for the test that checks a release build's
    // messages (`make test` builds it with -c release).
    .executableTarget(
      name: "stop-messages",
      dependencies: ["Coroutines"],
      path: "Tests/StopMessages"
    ),
    // The tests' self-check of the two context switches: only the tests run it.
    .target(
      name: "CSwitchProbe",
      dependencies: ["CUContext"],
      path: "Tests/CSwitchProbe"
    ),
    .testTarget(
      name: "CoroutinesTests",
      dependencies: ["Coroutines", "CSwitchProbe"],
      path: "Tests/CoroutinesTests"
    ),
    .testTarget(
      name: "ExamplesTests",
      dependencies: ["ExamplesKit", "Coroutines"],
      path: "Tests/ExamplesTests"
    ),
  ],
  swiftLanguageModes: [.v6]
)
