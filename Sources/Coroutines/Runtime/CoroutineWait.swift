import CUContext

/// Ends one wait of one coroutine: the first `resume` wins, later ones are ignored, and a
/// resumer dropped without resuming unwinds the coroutine with `CancellationError` instead of
/// leaving it parked forever.
///
/// `@usableFromInline`, with the awaiting path `@inlinable`, so that a caller's `co_await` is
/// specialised for its `T`: unspecialised, each wait looked up the generic metadata of
/// `CoroutineResumer<T>`, `Result<T, any Error>` and its optional in the runtime's hash tables.
@usableFromInline
final class CoroutineResumer<T>: @unchecked Sendable {  // `Coroutine.claim` makes writes exclusive
  @usableFromInline let coroutine: Coroutine
  @usableFromInline let generation: UInt64
  @usableFromInline let slot: UnsafeMutablePointer<Result<T, any Error>?>

  @inlinable
  init(coroutine: Coroutine, generation: UInt64, slot: UnsafeMutablePointer<Result<T, any Error>?>)
  {
    self.coroutine = coroutine
    self.generation = generation
    self.slot = slot
  }

  /// Delivers `result` and wakes the coroutine, if this wait has not ended yet.
  @inlinable
  func resume(_ result: Result<T, any Error>) {
    coroutine.deliver(result, to: slot, endingWait: generation)
  }

  deinit {
    coroutine.endWaitUnanswered(generation)
  }
}

/// One coroutine's armed wait as a value: the coroutine, the wait's generation and where its
/// result goes, for a table or list that keeps many waits (a poller's, a simulated stream's).
///
/// Unlike ``CoroutineResumer`` it allocates nothing, and has no deinit to notice that it was
/// dropped: whatever keeps it ends it (``resume(_:)`` or ``abandon()``) before letting go.
// `Coroutine.claim` makes the writes to `slot` exclusive.
struct CoroutineWaiter<T>: @unchecked Sendable {
  let coroutine: Coroutine
  let generation: UInt64
  let slot: UnsafeMutablePointer<Result<T, any Error>?>

  /// Delivers `result` and wakes the coroutine, if this wait has not ended yet.
  func resume(_ result: Result<T, any Error>) {
    coroutine.deliver(result, to: slot, endingWait: generation)
  }

  /// Ends the wait without a result (the coroutine wakes with `CancellationError`), reported
  /// as abandoned unless the coroutine was cancelled: what it waited in went away.
  func abandon() {
    coroutine.endWaitUnanswered(generation)
  }

  /// True when `other` is this same wait.
  func isSame(as other: Self) -> Bool {
    coroutine === other.coroutine && generation == other.generation
  }
}

extension Coroutine {
  /// Ends the wait of `generation` with `result` and wakes the coroutine, if that wait has not
  /// ended yet. The result goes to `slot`; with `inRecord`, for a wait that `waitForDelivery`
  /// reads back, a value that fits in a word goes into the record's `deliveredWord` instead, so
  /// that the woken coroutine finds it on the line the wake-up brought back to its core.
  @inlinable @discardableResult
  func deliver<T>(
    _ result: Result<T, any Error>, to slot: UnsafeMutablePointer<Result<T, any Error>?>,
    endingWait generation: UInt64, inRecord: Bool = false
  ) -> Bool {
    guard claim(generation) else { return false }
    if inRecord, case .success(let value) = result, fitsInWord(T.self) {
      withUnsafeMutableBytes(of: &deliveredWord) { $0.storeBytes(of: value, as: T.self) }
      wordDelivered = true
    } else {
      // Initialized over the nil the slot holds until now, which needs no destroying: an
      // assignment destroyed it through the optional's value witness, a cost in debug builds.
      slot.initialize(to: result)
    }
    wake()
    return true
  }

  /// Ends the wait of `generation`, if it has not ended yet, leaving its slot empty: the
  /// coroutine throws `CancellationError`. For whoever was to answer it and never will (a
  /// resumer or a future released unanswered): unless the coroutine was cancelled, that is a
  /// bug of the program's, reported first (see `reportAbandonedWait()`).
  @usableFromInline
  func endWaitUnanswered(_ generation: UInt64) {
    guard claim(generation) else { return }
    if !isCancelled { reportAbandonedWait() }
    wake()
  }

  /// Reports, through the coroutine's task's unhandled-error handler, that the wait it is parked
  /// in ends because what it waited on was released: its `CancellationError` alone would not
  /// say why. The coroutine cannot run meanwhile: the caller has claimed its wait and not yet
  /// woken it, so its task and its record's wait reason stay as they are.
  @inline(never)
  func reportAbandonedWait() {
    let reason = CoroutineWaitReason(bits: registryEntry.waitReason.load(ordering: .relaxed))
    attachment?.reportUnhandled(CoroutineWaitAbandoned(waitReason: reason.words ?? "wait"))
  }
}

extension Coroutine {
  /// Suspends this coroutine until `register`'s resumer is called (or cancellation ends the
  /// wait), then returns the delivered value or throws the delivered error.
  ///
  /// Must run on this coroutine's own stack. The result is written straight into this frame,
  /// so a wait allocates only the resumer — except on a shared stack, where another coroutine
  /// may be using these addresses when the resumer writes, so the result waits on the heap.
  @inlinable @inline(__always)
  func suspend<T>(
    for reason: CoroutineWaitReason, _ register: (CoroutineResumer<T>) -> Void
  ) throws -> T {
    let delivered = try waitForDelivery(for: reason) { generation, slot in
      register(CoroutineResumer(coroutine: self, generation: generation, slot: slot))
    }
    guard let delivered else { throw CancellationError() }
    return try delivered.get()
  }

  /// Arms a wait for `reason`, lets `register` hand its generation and result slot to whoever will end
  /// it (with `deliver(_:to:endingWait:inRecord:)` or `endWaitUnanswered(_:)`), and parks until it
  /// ends; returns what was delivered, or nil when the wait ended without a result
  /// (cancellation, or a waker that went away).
  @inlinable @inline(__always)
  func waitForDelivery<T>(
    for reason: CoroutineWaitReason,
    _ register: (UInt64, UnsafeMutablePointer<Result<T, any Error>?>) -> Void
  ) throws -> Result<T, any Error>? {
    if isCancelled { throw CancellationError() }
    let delivered: Result<T, any Error>?
    if usesSharedStack {
      let slot = UnsafeMutablePointer<Result<T, any Error>?>.allocate(capacity: 1)
      slot.initialize(to: nil)
      wait(into: slot, for: reason, register)
      delivered = slot.move()
      slot.deallocate()
    } else {
      var inFrame: Result<T, any Error>? = nil
      withUnsafeMutablePointer(to: &inFrame) { wait(into: $0, for: reason, register) }
      delivered = inFrame
    }
    if fitsInWord(T.self), wordDelivered {
      wordDelivered = false
      return .success(withUnsafeBytes(of: deliveredWord) { $0.load(as: T.self) })
    }
    return delivered
  }

  /// Arms a wait whose result goes to `slot`, hands its generation and `slot` to `register`
  /// and parks until the wait ends. Only the waker that wins the wait writes `slot`, before it
  /// wakes the coroutine.
  @inlinable @inline(__always)
  func wait<T>(
    into slot: UnsafeMutablePointer<Result<T, any Error>?>, for reason: CoroutineWaitReason,
    _ register: (UInt64, UnsafeMutablePointer<Result<T, any Error>?>) -> Void
  ) {
    let generation = armWait(reason)
    register(generation, slot)
    endWaitIfCancelled(generation)
    // Parks from the caller's own frame (see "Switching" in Coroutine+Switch.swift).
    if let fiber = fiberToPark() { cu_fiber_suspend(fiber) }
  }
}

/// Whether a value of `type` can travel in one machine word: a plain value (no references) of
/// at most a word's size and alignment. Such results skip the heap on the way to a waiter.
@inlinable @inline(__always)
func fitsInWord<T>(_ type: T.Type) -> Bool {
  _isPOD(T.self) && MemoryLayout<T>.size <= MemoryLayout<UInt>.size
    && MemoryLayout<T>.alignment <= MemoryLayout<UInt>.alignment
}
