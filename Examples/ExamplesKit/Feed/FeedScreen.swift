import Coroutines

/// The feed screen's view: shows progress and reloads its list. Like any UI, it must only be
/// touched on its main loop; it counts the calls that came from anywhere else.
public final class FeedScreen: Sendable {
  private struct State {
    var progress: [String] = []
    var reloads: [[SavedFeed]] = []
    var offLoopCalls = 0
  }

  private let label: String
  /// Whether the calling code runs on the screen's main loop.
  private let onLoop: @Sendable () -> Bool
  private let narrator: Narrator
  private let state = Locked(State())

  /// A screen called `label` in the narration, living on `loop`.
  public init(label: String, loop: CoroutineLoop, narrator: Narrator) {
    self.label = label
    onLoop = { CoroutineLoop.current === loop }
    self.narrator = narrator
  }

  /// A screen called `label` whose main loop is the test loop `loop`: its calls must come from
  /// coroutines of that loop.
  public init(label: String, testLoop loop: CoroutineTestLoop, narrator: Narrator) {
    self.label = label
    onLoop = { CoroutineHandle.current?.scheduler === loop }
    self.narrator = narrator
  }

  /// Shows `message` in the progress bar.
  public func showProgress(_ message: String) {
    record { $0.progress.append(message) }
    narrator.say("\(label): \(message)")
  }

  /// Replaces the list with `feeds`.
  public func reload(_ feeds: [SavedFeed]) {
    record { $0.reloads.append(feeds) }
    narrator.say("\(label): reloaded the list with \(feeds.count) feeds")
  }

  /// Every progress message shown, in order.
  public var progressMessages: [String] { state.value.progress }
  /// Every list the screen was reloaded with, in order.
  public var reloads: [[SavedFeed]] { state.value.reloads }
  /// Calls made off the screen's loop: a UI bug; zero in both versions.
  public var offLoopCalls: Int { state.value.offLoopCalls }

  private func record(_ change: (inout State) -> Void) {
    let onLoop = onLoop()
    state.withLock {
      change(&$0)
      if !onLoop { $0.offLoopCalls += 1 }
    }
  }
}
