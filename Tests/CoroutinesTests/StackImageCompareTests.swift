import CUContext
import Testing

@testable import Coroutines

/// The comparison behind a shared stack's stored differences: a bit per word that differs from
/// the stack's image, at any offset in the map. Eight words per step, on whichever vector units
/// the processor has, it must give the bits a plain word-by-word comparison gives.
@Suite struct StackImageCompareTests {
  typealias Compare =
    @convention(c) (
      UnsafePointer<UInt64>, UnsafePointer<UInt64>, Int, Int, UnsafeMutablePointer<UInt64>
    ) -> Void

  /// The comparison a switch uses here, and the one a processor without AVX2 uses.
  static let comparisons: [(String, Compare)] = [
    ("chosen for this processor", cu_shared_stack_mark_differences),
    ("baseline", cu_shared_stack_mark_differences_baseline),
  ]

  /// Words that differ from `reference` where `random` says so, in runs and alone.
  private func wordsDiffering(
    from reference: [UInt64], _ random: inout SplitMix64
  ) -> [UInt64] {
    reference.map { word in
      switch random.next() % 4 {
      case 0: word ^ (1 << (random.next() % 64))  // one bit off: still a different word
      case 1: word &+ 1
      default: word
      }
    }
  }

  /// The bits a word-by-word comparison sets.
  private func expectedMap(_ words: [UInt64], _ reference: [UInt64], first: Int, length: Int)
    -> [UInt64]
  {
    var map = [UInt64](repeating: 0, count: length)
    for index in words.indices where words[index] != reference[index] {
      map[(first + index) / 64] |= 1 << ((first + index) % 64)
    }
    return map
  }

  private func marked(
    _ words: [UInt64], _ reference: [UInt64], first: Int, length: Int, by compare: Compare
  ) -> [UInt64] {
    var map = [UInt64](repeating: 0, count: length)
    words.withUnsafeBufferPointer { wordsBuffer in
      reference.withUnsafeBufferPointer { referenceBuffer in
        map.withUnsafeMutableBufferPointer { mapBuffer in
          compare(
            wordsBuffer.baseAddress!, referenceBuffer.baseAddress!, words.count, first,
            mapBuffer.baseAddress!)
        }
      }
    }
    return map
  }

  @Test(arguments: comparisons.indices)
  func marksExactlyTheWordsThatDiffer(_ comparison: Int) {
    let (name, compare) = Self.comparisons[comparison]
    var random = SplitMix64(seed: 6)
    // Every count up to three map words, at offsets that start mid-word, on a word boundary
    // and just before one; the last word of each run of 64 and the odd word after the last step
    // of two are where a shifted mask goes wrong.
    for count in 0...192 {
      for first in [0, 1, 3, 9, 31, 60, 63, 64, 100] {
        let reference = (0..<count).map { _ in random.next() }
        let words = wordsDiffering(from: reference, &random)
        let length = (first + count + 63) / 64 + 1
        let expected = expectedMap(words, reference, first: first, length: length)
        let map = marked(words, reference, first: first, length: length, by: compare)
        #expect(map == expected, "\(name): count \(count), first \(first)")
      }
    }
  }

  @Test(arguments: comparisons.indices)
  func setsEveryBitWhenEveryWordDiffersAndNoneWhenNoneDoes(_ comparison: Int) {
    let compare = Self.comparisons[comparison].1
    let reference = (0..<130).map { UInt64($0) }
    let none = marked(reference, reference, first: 9, length: 3, by: compare)
    #expect(none == [0, 0, 0] as [UInt64])
    let all = marked(reference.map { ~$0 }, reference, first: 9, length: 3, by: compare)
    #expect(all == [~0 << 9, ~0, (1 << 11) - 1] as [UInt64])
  }

  /// A word whose halves differ alone (only its high half, only its low half) still differs:
  /// SSE2 compares 32-bit halves and must pair them.
  @Test(arguments: comparisons.indices)
  func aWordDifferingInOneHalfDiffers(_ comparison: Int) {
    let compare = Self.comparisons[comparison].1
    let reference = [UInt64](repeating: 0x1234_5678_9abc_def0, count: 16)
    var words = reference
    words[3] ^= 1 << 40
    words[12] ^= 1 << 7
    let map = marked(words, reference, first: 0, length: 1, by: compare)
    #expect(map == [1 << 3 | 1 << 12])
  }

  /// Bits already set in the map (the registers' part, compared first) stay set.
  @Test func keepsBitsAlreadyInTheMap() {
    let reference: [UInt64] = [1, 2, 3, 4, 5]
    var map: [UInt64] = [0b1, 0]
    reference.withUnsafeBufferPointer { buffer in
      map.withUnsafeMutableBufferPointer { mapBuffer in
        cu_shared_stack_mark_differences(
          buffer.baseAddress!, buffer.baseAddress!, 5, 9, mapBuffer.baseAddress!)
      }
    }
    #expect(map == [0b1, 0])
  }
}
