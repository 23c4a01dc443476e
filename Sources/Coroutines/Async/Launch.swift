import CUContext

/// Starts a stackful coroutine running `body` and returns its task.
///
/// Launched from inside another coroutine, the new coroutine is that coroutine's child: it is
/// cancelled with it, and the parent's task settles only after it (see ``CoTask``). A
/// coroutine that must outlive its launcher is launched with
/// ``co_launch(on:name:stackSize:stack:detached:_:)`` or in a ``CoScope``.
///
/// - Parameters:
///   - scheduler: Where the coroutine runs and resumes. By default: inside a coroutine, that
///     coroutine's scheduler; outside, the loop the calling thread is running (a
///     ``CoroutineLoop`` or a ``CoroutineTestLoop``), else ``CoroutineLoop/main``, which runs
///     it once the program runs that loop (see ``co_launch(name:stackSize:_:)``).
///   - name: A name for diagnostics.
///   - stackSize: Bytes of stack, from ``CoroutineStack/minimumSize`` to
///     ``CoroutineStack/maximumSize``; ``CoroutineStack/defaultSize`` when `nil`. A size out of
///     range stops the program with a message naming it.
///   - body: The coroutine's code. It may suspend with `co_await`, ``co_delay(_:)`` and the
///     rest; a thrown error rejects the task and never crashes the process. An error that
///     nobody observes goes to ``CoUnhandledErrors``.
/// - Returns: The task: await it, observe it, or cancel it.
///
/// The coroutine's stack is dedicated unless ``CoroutineStack/defaultMode`` says shared; see
/// ``co_launch(on:name:stackSize:stack:_:)`` to choose per launch.
///
/// `body` is `@Sendable`: it may run on another thread than the code that wrote it, so Swift
/// checks what it captures, and a body written in `main.swift` or a `@MainActor` type does not
/// take on the main actor's isolation (see "Sendable bodies" in
/// <doc:CoroutinesSchedulersAndLoop>). ``co_launch(name:stackSize:_:)``, without a scheduler,
/// takes a `sending` body instead.
@discardableResult
@inlinable  // specialised for the caller's T: unspecialised, each launch looked up generic metadata
public func co_launch<T>(
  on scheduler: (any CoroutineScheduler)?,
  name: String? = nil,
  stackSize: Int? = nil,
  _ body: @escaping @Sendable () throws -> T
) -> CoTask<T> {
  launchCoroutine(
    on: scheduler, name: name, stackSize: stackSize, stack: nil, detached: false, body)
}

/// Starts a stackful coroutine running `body` on the default scheduler and returns its task:
/// inside a coroutine, that coroutine's scheduler; outside, the loop the calling thread is
/// running (a ``CoroutineLoop`` or a ``CoroutineTestLoop``), else ``CoroutineLoop/main``.
///
/// The same as ``co_launch(on:name:stackSize:_:)`` otherwise, except that `body` is `sending`
/// rather than `@Sendable`: it may capture non-Sendable values, as long as the launcher does not
/// use them after the launch. The default scheduler may run the child on another thread at the
/// same time as its launcher (a ``CoroutineLoopGroup`` moves coroutines between its loops, a
/// concurrent `DispatchQueue` runs jobs side by side), so the compiler rejects a body that
/// captures a `var` or a non-Sendable object the launcher goes on using: children hand their
/// results back as their task's value, and shared state goes behind a ``CoMutex`` or another
/// synchronised `Sendable` type (see "Sendable bodies" in <doc:CoroutinesSchedulersAndLoop>).
///
/// Outside any coroutine and any running loop (at the top level of `main.swift`, say), the
/// coroutine waits on ``CoroutineLoop/main`` until the program runs that loop with
/// ``CoroutineLoop/run()``; ``CoroutineLoop/run(stackSize:_:)`` runs a loop of its own instead.
/// A program that ends without running the main loop after such a launch is told so, in one
/// line on standard error at exit: `co_launch scheduled 2 coroutine(s) on CoroutineLoop.main,
/// but the main loop never ran: …`.
///
/// ```swift
/// let children = (0..<4).map { _ in
///   co_launch { () -> Int in
///     var count = 0  // each child counts in a variable of its own
///     for _ in 0..<100_000 { count += 1 }
///     return count
///   }
/// }
/// return try children.reduce(0) { try $0 + co_await($1) }  // 400 000
/// ```
///
/// - Parameters:
///   - name: A name for diagnostics.
///   - stackSize: As for ``co_launch(on:name:stackSize:_:)``.
///   - body: The coroutine's code, handed over to the coroutine (`sending`).
/// - Returns: The task: await it, observe it, or cancel it.
@discardableResult
@inlinable
public func co_launch<T>(
  name: String? = nil,
  stackSize: Int? = nil,
  _ body: sending @escaping () throws -> T
) -> CoTask<T> {
  launchCoroutine(on: nil, name: name, stackSize: stackSize, stack: nil, detached: false, body)
}

/// Starts a stackful coroutine on a test loop: the same as ``co_launch(on:name:stackSize:_:)``,
/// except that `body` may capture anything. A ``CoroutineTestLoop`` runs its jobs on the thread
/// that calls ``CoroutineTestLoop/advance(by:)`` or ``CoroutineTestLoop/runUntilIdle()``, the
/// test's own, one at a time, so coroutines launched on it may share the test's non-Sendable
/// objects and variables. (A child such a coroutine launches without a scheduler goes through
/// ``co_launch(name:stackSize:_:)``, whose body is `sending`: the compiler cannot tell that the
/// current coroutine's scheduler is a test loop.)
///
/// - Parameters:
///   - loop: The test loop that runs the coroutine.
///   - name: A name for diagnostics.
///   - stackSize: As for ``co_launch(on:name:stackSize:_:)``.
///   - body: The coroutine's code.
/// - Returns: The task: await it, observe it, or cancel it.
@_documentation(visibility: internal)  // one entry in the docs, and no ambiguous links
@discardableResult
@inlinable
public func co_launch<T>(
  on loop: CoroutineTestLoop,
  name: String? = nil,
  stackSize: Int? = nil,
  _ body: @escaping () throws -> T
) -> CoTask<T> {
  launchCoroutine(on: loop, name: name, stackSize: stackSize, stack: nil, detached: false, body)
}

/// Starts a stackful coroutine running `body` on the stack `stack` asks for, and returns its
/// task.
///
/// ```swift
/// co_launch(stack: .shared) { try serve(connection) }
/// ```
///
/// - Parameters:
///   - scheduler: As for ``co_launch(on:name:stackSize:_:)``. A ``CoroutineStack/Mode/shared``
///     coroutine needs a ``CoroutineLoop``; any other scheduler stops the program with a message.
///   - name: A name for diagnostics.
///   - stackSize: As for ``co_launch(on:name:stackSize:_:)``; for a shared stack, the size of the
///     loop's shared stacks it runs on.
///   - stack: ``CoroutineStack/Mode/dedicated`` for a stack of its own,
///     ``CoroutineStack/Mode/shared`` for one of its loop's shared stacks (see
///     ``CoroutineStack/Mode``).
///   - body: The coroutine's code.
/// - Returns: The task: await it, observe it, or cancel it.
@discardableResult
@inlinable
public func co_launch<T>(
  on scheduler: (any CoroutineScheduler)?,
  name: String? = nil,
  stackSize: Int? = nil,
  stack: CoroutineStack.Mode,
  _ body: @escaping @Sendable () throws -> T
) -> CoTask<T> {
  launchCoroutine(
    on: scheduler, name: name, stackSize: stackSize, stack: stack, detached: false, body)
}

/// Starts a stackful coroutine on the default scheduler, on the stack `stack` asks for; as
/// ``co_launch(on:name:stackSize:stack:_:)`` otherwise, with a `sending` body, as
/// ``co_launch(name:stackSize:_:)`` takes and for the same reason: the default scheduler may run
/// it on another thread at the same time as its launcher.
///
/// - Parameters:
///   - name: A name for diagnostics.
///   - stackSize: As for ``co_launch(on:name:stackSize:stack:_:)``.
///   - stack: As for ``co_launch(on:name:stackSize:stack:_:)``.
///   - body: The coroutine's code, handed over to the coroutine (`sending`).
/// - Returns: The task: await it, observe it, or cancel it.
@discardableResult
@inlinable
public func co_launch<T>(
  name: String? = nil,
  stackSize: Int? = nil,
  stack: CoroutineStack.Mode,
  _ body: sending @escaping () throws -> T
) -> CoTask<T> {
  launchCoroutine(on: nil, name: name, stackSize: stackSize, stack: stack, detached: false, body)
}

/// Starts a stackful coroutine, detached from the coroutine that launches it if `detached`.
///
/// A detached coroutine is not its launcher's child: it is not cancelled with the launcher,
/// and the launcher's task does not wait for it. Long-lived coroutines started from a
/// coroutine (a server loop, a log uploader), and coroutines whose handle a coroutine hands
/// out, are launched detached or in a ``CoScope``. A detached coroutine still reports
/// unobserved errors where its launcher does (``CoUnhandledErrors``).
///
/// ```swift
/// co_launch(detached: true) { try uploadLogs() }
/// ```
///
/// - Parameters:
///   - scheduler: As for ``co_launch(on:name:stackSize:_:)``.
///   - name: A name for diagnostics.
///   - stackSize: As for ``co_launch(on:name:stackSize:_:)``.
///   - stack: As for ``co_launch(on:name:stackSize:stack:_:)``; `nil` follows
///     ``CoroutineStack/defaultMode``.
///   - detached: True to launch it detached; false makes this the same as
///     ``co_launch(on:name:stackSize:stack:_:)``.
///   - body: The coroutine's code.
/// - Returns: The task: await it, observe it, or cancel it.
@discardableResult
@inlinable
public func co_launch<T>(
  on scheduler: (any CoroutineScheduler)?,
  name: String? = nil,
  stackSize: Int? = nil,
  stack: CoroutineStack.Mode? = nil,
  detached: Bool,
  _ body: @escaping @Sendable () throws -> T
) -> CoTask<T> {
  launchCoroutine(
    on: scheduler, name: name, stackSize: stackSize, stack: stack, detached: detached, body)
}

/// Starts a stackful coroutine on the default scheduler, detached from the coroutine that
/// launches it if `detached`; as ``co_launch(on:name:stackSize:stack:detached:_:)`` otherwise,
/// with a `sending` body, as ``co_launch(name:stackSize:_:)`` takes and for the same reason.
///
/// - Parameters:
///   - name: A name for diagnostics.
///   - stackSize: As for ``co_launch(on:name:stackSize:_:)``.
///   - stack: As for ``co_launch(on:name:stackSize:stack:detached:_:)``.
///   - detached: True to launch it detached.
///   - body: The coroutine's code, handed over to the coroutine (`sending`).
/// - Returns: The task: await it, observe it, or cancel it.
@discardableResult
@inlinable
public func co_launch<T>(
  name: String? = nil,
  stackSize: Int? = nil,
  stack: CoroutineStack.Mode? = nil,
  detached: Bool,
  _ body: sending @escaping () throws -> T
) -> CoTask<T> {
  launchCoroutine(
    on: nil, name: name, stackSize: stackSize, stack: stack, detached: detached, body)
}

/// Every form of `co_launch`; `stack == nil` follows ``CoroutineStack/defaultMode``.
///
/// `body` is a plain closure here, stored in the task and run by the coroutine, possibly on
/// another thread. That is sound because every public entry point hands it over checked: it is
/// `@Sendable` (a scheduler given), `sending` (the default scheduler: the launcher keeps no
/// access to what it captures), or non-Sendable only where the coroutine certainly runs on the
/// launcher's own thread, one job at a time with it (a ``CoroutineTestLoop``).
///
/// `consuming`, as ``CoTask``'s initialiser takes it: a `sending` parameter arrives owned, and
/// is moved into the task. Borrowed here, the task's store retained it and the end of the
/// launch released the launcher's reference: a retain and a release more per launch.
@inlinable
func launchCoroutine<T>(
  on scheduler: (any CoroutineScheduler)?, name: String?, stackSize: Int?,
  stack: CoroutineStack.Mode?, detached: Bool, _ body: consuming @escaping () throws -> T
) -> CoTask<T> {
  if let stackSize { CoroutineStack.validate(stackSize, in: "co_launch(stackSize:)") }
  let size = roundedToPages(stackSize ?? CoroutineStack.defaultSize)
  // Captures nothing (the task holds the body), so it costs no allocation.
  let start: () -> (() -> Void) = {
    // The task unretained (the attachment holds it until the body has run), and the closure
    // handed out through a local: returned through `_withUnsafeGuaranteedRef`'s generic result,
    // it was reabstracted at two allocations, and `takeUnretainedValue()` cost a retain and a
    // release of the task.
    var publish: Optional<() -> Void> = nil
    currentTaskAttachment()._withUnsafeGuaranteedRef {
      publish = unsafeDowncast($0, to: CoTask<T>.self).runBody()
    }
    return publish!
  }
  // The launcher's coroutine-locals (CoLocal), looked up before the record exists: stored
  // after it, the call made the compiler retain and release the record around it.
  let locals = CoLocalBinding.inherited()
  let coroutine: Coroutine
  if scheduler == nil, let group = Coroutine.currentGroup {
    // A group coroutine's child: the group unretained (see `Coroutine.Home.group`).
    coroutine = Coroutine(
      inheriting: group, name: name, stackSize: size,
      sharedStack: (stack ?? CoroutineStack.defaultMode) == .shared, locals: consume locals,
      body: start)
  } else {
    let target = scheduler ?? defaultScheduler()
    let shared = sharedStackChosen(stack, on: target)
    coroutine = Coroutine(
      scheduler: consume target, name: name, stackSize: size, sharedStack: shared,
      locals: consume locals, body: start)
  }
  let task = CoTask<T>(coroutine: consume coroutine, detached: detached, body: body)
  task.start()
  return task
}

/// The task of the coroutine running on this thread, which is about to run its body. The task
/// is created after the coroutine, so the coroutine's closure cannot capture it; it reaches it
/// through the coroutine's attachment instead, which the task set before the coroutine started
/// and clears when it finishes (a box holding the task cost an allocation per launch). The
/// attachment also keeps the task alive while the coroutine runs: task → coroutine →
/// attachment → task, broken in `finish`. Unretained for that reason: the attachment holds the
/// task until the body has run (a retain and a release per launch otherwise).
@usableFromInline
func currentTaskAttachment() -> Unmanaged<AnyObject> {
  // Unretained: the coroutine certainly runs while its own code asks.
  guard
    let task = Coroutine.currentUnretained?._withUnsafeGuaranteedRef({
      $0.attachment.map { Unmanaged<AnyObject>.passUnretained($0) }
    })
  else {
    coStop("a launched coroutine started without its task")
  }
  return task
}

/// The scheduler for a coroutine launched without one.
@usableFromInline
func defaultScheduler() -> any CoroutineScheduler {
  if let coroutine = Coroutine.currentUnretained {
    return coroutine._withUnsafeGuaranteedRef { $0.home }
  }
  if let loop = CoroutineLoop.current { return loop.group ?? loop }
  if let testLoop = CoroutineTestLoop.current { return testLoop }
  MainLoopWatch.launchingByDefault()  // a line at exit if the main loop never runs
  return CoroutineLoop.main
}

@usableFromInline
func roundedToPages(_ size: Int) -> Int {
  // A page size is a power of two: a mask, not a division (about 25 instructions per launch).
  let mask = cu_page_size() - 1
  return (size + mask) & ~mask
}
