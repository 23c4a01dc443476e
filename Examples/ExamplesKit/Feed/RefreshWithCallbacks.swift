import Coroutines
import Dispatch
import Foundation

/// This file's path, so the walkthrough can count the lines of the region below.
let refreshWithCallbacksSource = #filePath

// region: callbacks
/// The feed screen's refresh as it is written without coroutines: one feed at a time, a worker
/// thread waiting on a `DispatchGroup` for each fetch-and-save, progress and reload sent back
/// to the main loop by hand. Failed fetches are saved without items.
public func refreshFeedsWithCallbacks(
  _ subscriptions: [Subscription], http: StubHTTPClient, database: StubFeedDatabase,
  screen: FeedScreen, mainLoop: any CoroutineScheduler,
  completion: @escaping @Sendable ([SavedFeed]) -> Void
) {
  DispatchQueue.global().async {
    let saved = Locked<[SavedFeed]>([])
    for (index, subscription) in subscriptions.enumerated() {
      let progress = "Fetching \(subscription.title)... (\(index + 1)/\(subscriptions.count))"
      mainLoop.schedule { screen.showProgress(progress) }
      let group = DispatchGroup()
      group.enter()
      http.get(subscription.url) { result in
        let record: FeedRecord
        switch result {
        case .success(let data):
          do {
            record = try FeedParser.parse(data, for: subscription)
          } catch {
            let icon = database.rememberedIcon(for: subscription.url)
            record = FeedRecord(failed: subscription, error: error, icon: icon)
          }
        case .failure(let error):
          let icon = database.rememberedIcon(for: subscription.url)
          record = FeedRecord(failed: subscription, error: error, icon: icon)
        }
        database.save(record) { id in
          saved.withLock { $0.append(SavedFeed(id: id, record: record)) }
          group.leave()
        }
      }
      group.wait()
    }
    let feeds = saved.value
    mainLoop.schedule {
      screen.reload(feeds)
      completion(feeds)
    }
  }
}
// endregion
