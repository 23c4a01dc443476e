extension CoChannel {
  /// A channel that keeps only the latest value: a send never waits, and replaces a value
  /// that no receiver has taken yet.
  ///
  /// ```swift
  /// let progress = CoChannel<Double>.conflated()
  /// progress.trySend(0.25)
  /// progress.trySend(0.5)
  /// let latest = progress.tryReceive()  // 0.5
  /// ```
  ///
  /// For state that only matters as it is now: a progress bar, a location, the newest settings.
  /// A waiting receiver takes a sent value at once; otherwise the value waits in the channel's
  /// one slot until a receiver comes or a newer value replaces it. A replaced value is dropped:
  /// unlike other channels, a value sent successfully may never be received. ``close()`` keeps
  /// the latest value for receivers, as for other channels.
  public static func conflated() -> CoChannel<T> {
    CoChannel(storage: ChannelStorage(capacity: 1, dropsOldest: true))
  }

  /// True for a channel made by ``conflated()``.
  public var isConflated: Bool { storage.dropsOldest }
}
