import Coroutines
import Foundation

/// This file's path, so the walkthrough can count the lines of the region below.
let refreshWithCoroutinesSource = #filePath

// region: coroutine
/// The same refresh in a coroutine on the main loop: straight-line code, each `co_await`
/// parks the coroutine (no thread waits) and it resumes on the loop, so the screen is touched
/// directly. Failed fetches are saved without items.
public func refreshFeeds(
  _ subscriptions: [Subscription], http: some FeedHTTPClient, database: StubFeedDatabase,
  screen: FeedScreen
) throws -> [SavedFeed] {
  var saved: [SavedFeed] = []
  for (index, subscription) in subscriptions.enumerated() {
    screen.showProgress("Fetching \(subscription.title)... (\(index + 1)/\(subscriptions.count))")
    let record: FeedRecord
    do {
      let data: Data = try co_await { http.get(subscription.url, completion: $0) }
      record = try FeedParser.parse(data, for: subscription)
    } catch let error as CancellationError {
      throw error
    } catch {
      let icon = database.rememberedIcon(for: subscription.url)
      record = FeedRecord(failed: subscription, error: error, icon: icon)
    }
    let id: Int = try co_await { done in database.save(record) { done(.success($0)) } }
    saved.append(SavedFeed(id: id, record: record))
  }
  screen.reload(saved)
  return saved
}
// endregion
