/// A stack of fibers in raw storage: pushing and popping cost a few instructions, where an
/// array in a class's field paid a uniqueness check and an unspecialised call for each (about
/// 50 instructions per launch). Noncopyable, because it owns its storage.
struct FiberList: ~Copyable {
  private var storage: UnsafeMutablePointer<OpaquePointer>?
  private var capacity = 0
  private(set) var count = 0

  init() {}

  deinit { storage?.deallocate() }

  mutating func append(_ fiber: OpaquePointer) {
    if count == capacity { grow() }
    storage![count] = fiber
    count += 1
  }

  mutating func popLast() -> OpaquePointer? {
    guard count > 0 else { return nil }
    count -= 1
    return storage![count]
  }

  private mutating func grow() {
    let bigger = UnsafeMutablePointer<OpaquePointer>.allocate(capacity: max(16, capacity * 2))
    if let storage {
      bigger.moveInitialize(from: storage, count: count)
      storage.deallocate()
    }
    storage = bigger
    capacity = max(16, capacity * 2)
  }
}
