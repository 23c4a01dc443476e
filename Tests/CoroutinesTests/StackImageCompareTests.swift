import CUContext
import Testing

@testable import Coroutines

/// The comparison behind a shared stack's stored differences: a bit per word that differs from
/// the stack's image, at any offset in the map. Both loops (four words per step with AVX2, and the
/// portable one) must give the bits a plain word-by-word comparison gives.
@Suite struct StackImageCompareTests {
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
    _ words: [UInt64], _ reference: [UInt64], first: Int, length: Int, vector: Bool
  ) -> [UInt64]? {
    var map = [UInt64](repeating: 0, count: length)
    let done = words.withUnsafeBufferPointer { wordsBuffer in
      reference.withUnsafeBufferPointer { referenceBuffer in
        map.withUnsafeMutableBufferPointer { mapBuffer in
          cu_shared_stack_mark_differences(
            wordsBuffer.baseAddress!, referenceBuffer.baseAddress!, words.count, first,
            mapBuffer.baseAddress!, vector ? 1 : 0)
        }
      }
    }
    return done == 1 ? map : nil
  }

  @Test(arguments: [false, true])
  func marksExactlyTheWordsThatDiffer(vector: Bool) throws {
    if vector, cu_shared_stack_uses_avx2() == 0 {
      #expect(marked([1], [2], first: 0, length: 1, vector: true) == nil)  // refused, untouched
      return
    }
    var random = SplitMix64(seed: 6)
    // Every count up to three map words, at offsets that start mid-word, on a word boundary
    // and just before one; the last word of each run of 64 and the tail after the last step
    // of four are where a shifted mask goes wrong.
    for count in 0...192 {
      for first in [0, 1, 3, 9, 31, 60, 63, 64, 100] {
        let reference = (0..<count).map { _ in random.next() }
        let words = wordsDiffering(from: reference, &random)
        let length = (first + count + 63) / 64 + 1
        let expected = expectedMap(words, reference, first: first, length: length)
        let map = try #require(
          marked(words, reference, first: first, length: length, vector: vector))
        #expect(map == expected, "count \(count), first \(first)")
      }
    }
  }

  @Test(arguments: [false, true])
  func setsEveryBitWhenEveryWordDiffersAndNoneWhenNoneDoes(vector: Bool) throws {
    guard !vector || cu_shared_stack_uses_avx2() == 1 else { return }
    let reference = (0..<130).map { UInt64($0) }
    let none = try #require(marked(reference, reference, first: 9, length: 3, vector: vector))
    #expect(none == [0, 0, 0] as [UInt64])
    let all = try #require(
      marked(reference.map { ~$0 }, reference, first: 9, length: 3, vector: vector))
    #expect(all == [~0 << 9, ~0, (1 << 11) - 1] as [UInt64])
  }

  /// Bits already set in the map (the registers' part, compared first) stay set.
  @Test func keepsBitsAlreadyInTheMap() {
    let reference: [UInt64] = [1, 2, 3, 4, 5]
    var map: [UInt64] = [0b1, 0]
    reference.withUnsafeBufferPointer { buffer in
      map.withUnsafeMutableBufferPointer { mapBuffer in
        _ = cu_shared_stack_mark_differences(
          buffer.baseAddress!, buffer.baseAddress!, 5, 9, mapBuffer.baseAddress!,
          cu_shared_stack_uses_avx2())
      }
    }
    #expect(map == [0b1, 0])
  }
}
