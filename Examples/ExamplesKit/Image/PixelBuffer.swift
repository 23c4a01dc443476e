import Foundation

/// An image in memory: `width × height` RGBA pixels, one `UInt32` each (red in the low byte).
public struct PixelBuffer: Sendable, Equatable {
  /// Pixels per row.
  public let width: Int
  /// Rows.
  public let height: Int
  /// The pixels, row by row.
  public let pixels: [UInt32]

  /// An image of `width × height` `pixels`.
  public init(width: Int, height: Int, pixels: [UInt32]) {
    precondition(
      pixels.count == width * height,
      "PixelBuffer: \(pixels.count) pixels do not make \(width)×\(height)")
    self.width = width
    self.height = height
    self.pixels = pixels
  }

  /// A fingerprint of the pixels, to compare images in one line of narration.
  public var checksum: UInt32 {
    pixels.reduce(2_166_136_261 as UInt32) { ($0 ^ $1) &* 16_777_619 }
  }

  /// The image shrunk to `side × side` by averaging each block of pixels: real CPU work, a
  /// few operations for every source pixel.
  public func downscaled(toSide side: Int) -> PixelBuffer {
    precondition(
      side > 0 && side <= min(width, height), "downscaled(toSide:): \(side) is out of range")
    var result = [UInt32](repeating: 0, count: side * side)
    for row in 0..<side {
      let top = row * height / side
      let bottom = (row + 1) * height / side
      for column in 0..<side {
        let left = column * width / side
        let right = (column + 1) * width / side
        var sums = (0, 0, 0, 0)
        for y in top..<bottom {
          for x in left..<right {
            let pixel = pixels[y * width + x]
            sums.0 += Int(pixel & 0xff)
            sums.1 += Int(pixel >> 8 & 0xff)
            sums.2 += Int(pixel >> 16 & 0xff)
            sums.3 += Int(pixel >> 24)
          }
        }
        let count = (bottom - top) * (right - left)
        result[row * side + column] =
          UInt32(sums.0 / count) | UInt32(sums.1 / count) << 8 | UInt32(sums.2 / count) << 16
          | UInt32(sums.3 / count) << 24
      }
    }
    return PixelBuffer(width: side, height: side, pixels: result)
  }
}

extension PixelBuffer {
  /// The image as text, `columns × rows` characters from dark to light, to "show" it in a
  /// terminal.
  public func asciiArt(columns: Int, rows: Int) -> [String] {
    let ramp = Array(" .:-=+*#%@")
    return (0..<rows).map { row in
      String(
        (0..<columns).map { column in
          let pixel = pixels[(row * height / rows) * width + column * width / columns]
          let light =
            (Int(pixel & 0xff) * 3 + Int(pixel >> 8 & 0xff) * 6 + Int(pixel >> 16 & 0xff)) / 10
          return ramp[light * (ramp.count - 1) / 255]
        })
    }
  }
}

/// A made-up image format, small on the wire and costly to decode: a header, a 256-colour
/// palette and a seed from which every pixel is computed.
public enum ImageCodec {
  /// Why a file could not be decoded.
  public struct DecodingError: Error, CustomStringConvertible {
    /// What was wrong with the file.
    public let description: String
  }

  private static let magic = Array("PXL1".utf8)
  private static let headerSize = 4 + 4 + 4 + 8

  /// The file for a `width × height` image drawn from `seed`.
  public static func encode(width: Int, height: Int, seed: UInt64) -> Data {
    var bytes = magic
    for value in [UInt32(width), UInt32(height)] {
      bytes += withUnsafeBytes(of: value.littleEndian, Array.init)
    }
    bytes += withUnsafeBytes(of: seed.littleEndian, Array.init)
    for index in 0..<256 {
      let shade = UInt8(index)
      bytes += [shade, shade, 255 &- shade / 2, 255]
    }
    return Data(bytes)
  }

  /// Decodes a file made by ``encode(width:height:seed:)``: one palette lookup and a little
  /// integer arithmetic per pixel.
  public static func decode(_ data: Data) throws -> PixelBuffer {
    let bytes = [UInt8](data)
    guard bytes.count == headerSize + 1024, Array(bytes[0..<4]) == magic else {
      throw DecodingError(description: "not a PXL1 file (\(bytes.count) bytes)")
    }
    func integer<T: FixedWidthInteger>(at offset: Int, as type: T.Type) -> T {
      bytes[offset..<offset + MemoryLayout<T>.size].reversed().reduce(0) { $0 << 8 | T($1) }
    }
    let width = Int(integer(at: 4, as: UInt32.self))
    let height = Int(integer(at: 8, as: UInt32.self))
    let seed = integer(at: 12, as: UInt64.self)
    guard width > 0, height > 0, width * height <= 1 << 24 else {
      throw DecodingError(description: "bad size \(width)×\(height)")
    }
    let palette = (0..<256).map { integer(at: headerSize + $0 * 4, as: UInt32.self) }
    var pixels = [UInt32](repeating: 0, count: width * height)
    // Rings around the centre, scaled to the image so any size draws the same picture.
    let scale = max(1, width * width / 200)
    for y in 0..<height {
      for x in 0..<width {
        let dx = x - width / 2
        let dy = (y - height / 2) * 2
        let ring = (dx * dx + dy * dy) / scale + Int(truncatingIfNeeded: seed)
        pixels[y * width + x] = palette[ring & 0xff]
      }
    }
    return PixelBuffer(width: width, height: height, pixels: pixels)
  }
}
