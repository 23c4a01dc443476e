/// A small, fast pseudo-random generator whose whole state is one 64-bit word (Steele, Lea and
/// Flood's SplitMix64), so a seed names a sequence exactly.
///
/// The test loop draws from it instead of the system generator: the same seed must give the
/// same order of jobs on every run, every machine and every toolchain, which is also why
/// ``index(below:)`` is written here rather than left to `Int.random(in:using:)`, whose
/// algorithm the standard library may change.
struct SplitMix64: RandomNumberGenerator, Sendable {
  private var state: UInt64

  init(seed: UInt64) {
    state = seed
  }

  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var mixed = state
    mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
    mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
    return mixed ^ (mixed >> 31)
  }

  /// A number in `0..<count`: the high word of a 64×64-bit product spreads the draw over the
  /// range without a division (its bias, at most count/2⁶⁴, is far below anything a test sees).
  mutating func index(below count: Int) -> Int {
    coPrecondition(count > 0, "SplitMix64.index(below:): count \(count) is not positive")
    return Int(next().multipliedFullWidth(by: UInt64(count)).high)
  }
}
