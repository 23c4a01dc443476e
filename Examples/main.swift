import Coroutines
import Dispatch

// A first taste until the walkthroughs land: two callback-style downloads awaited in sequence.
func download(
  _ name: String, after seconds: Double,
  _ done: @escaping @Sendable (Result<String, any Error>) -> Void
) {
  DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { done(.success("<\(name)>")) }
}

let pages = try CoroutineLoop.run { () -> [String] in
  let first: String = try co_await { download("index.html", after: 0.02, $0) }
  let second: String = try co_await { download("about.html", after: 0.01, $0) }
  return [first, second]
}
print("downloaded \(pages.joined(separator: " and ")) without a single nested callback")
