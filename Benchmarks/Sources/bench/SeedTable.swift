import Coroutines
import Foundation

/// The seed's table: N tasks that each wait for simulated blocking I/O ten times (1 ms each),
/// as coroutines on one loop (on dedicated stacks, the default, and on the loop's shared stacks),
/// as goroutines with `GOMAXPROCS=1` (Benchmarks/Go/seed.go, when `go` is on the PATH) and as one
/// thread per task. Each cell runs in its own child process, so that its peak resident memory is
/// its own; Go's too, once per process, from a fresh start, as ours.
enum SeedTable {
  static let sizes = [10, 100, 1_000, 10_000, 100_000]
  /// The sizes judged against Go: coroutines take at most `goTarget` of its time there.
  static let judgedAgainstGo = [10_000, 100_000]
  static let goTarget = 0.5
  static let waits = 10
  static let wait = 0.001
  /// More threads than this are not started: the machine is shared, and each thread reserves
  /// a stack of 8 MiB of address space.
  static let threadCap = 1_000

  struct Cell {
    var wallNanoseconds: Double
    var threads: Int
    var peakBytes: Double
  }

  /// N coroutines on one loop, each doing `waits` × `co_delay(wait)`, on stacks of `mode`.
  static func coroutines(_ count: Int, stack mode: CoroutineStack.Mode) throws -> Cell {
    let before = residentBytes()
    let start = DispatchTime.now().uptimeNanoseconds
    try CoroutineLoop.run {
      for _ in 0..<count {
        co_launch(stack: mode) {
          for _ in 0..<waits { try co_delay(wait) }
        }
      }
    }
    let wall = Double(DispatchTime.now().uptimeNanoseconds - start)
    return Cell(wallNanoseconds: wall, threads: 1, peakBytes: Double(peakBytes() - before))
  }

  /// N threads, each doing `waits` × a blocking sleep of `wait`.
  static func threads(_ count: Int) -> Cell {
    let before = residentBytes()
    let start = DispatchTime.now().uptimeNanoseconds
    var threads: [Thread] = []
    let group = DispatchGroup()
    for _ in 0..<count {
      group.enter()
      let thread = Thread {
        for _ in 0..<waits { usleep(UInt32(wait * 1_000_000)) }
        group.leave()
      }
      threads.append(thread)
      thread.start()
    }
    group.wait()
    let wall = Double(DispatchTime.now().uptimeNanoseconds - start)
    return Cell(wallNanoseconds: wall, threads: count, peakBytes: Double(peakBytes() - before))
  }

  /// The resident set now, after resetting the peak to it (so `peakBytes()` measures from here).
  static func residentBytes() -> Int {
    try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
    return statusKiB("VmRSS:") * 1024
  }
  static func peakBytes() -> Int { statusKiB("VmHWM:") * 1024 }

  private static func statusKiB(_ key: String) -> Int {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    for line in status.split(separator: "\n") where line.hasPrefix(key) {
      let fields = line.dropFirst(key.count).split(whereSeparator: { $0 == " " || $0 == "\t" })
      return Int(fields.first ?? "") ?? 0
    }
    return 0
  }

  /// Go's time for the job at each size (`GOMAXPROCS=1`, the fastest of `processes` runs, each
  /// in a process of its own), or why it did not run.
  static func go(processes: Int) -> Result<[Int: Double], GoProgram.GoError> {
    var times: [Int: Double] = [:]
    for size in sizes {
      switch GoProgram.run(
        "seed", arguments: ["seed", "\(size)"], maxProcs: 1, runs: processes)
      {
      case .success(let numbers): times[size] = numbers[1]
      case .failure(let reason): return .failure(reason)
      }
    }
    return .success(times)
  }

  /// The table as Markdown, one row per N. The target (within 3× of the ideal at 10 000 tasks)
  /// is judged for each stack mode, and so is Go's (at most `goTarget` of its time) at the
  /// sizes of `judgedAgainstGo`.
  static func printTable(
    coroutines: [Int: Cell], shared: [Int: Cell], threads: [Int: Cell], go: [Int: Double]
  ) {
    let ideal = Double(waits) * wait * 1000
    print(
      "| Tasks (× \(waits) waits of \(Int(wait * 1000)) ms) | Coroutines: wall time | threads | "
        + "peak memory | per task | vs \(Int(ideal)) ms ideal | vs Go | "
        + "Shared stacks: wall time | peak memory | per task | vs ideal | vs Go | "
        + "Go, GOMAXPROCS=1: wall time | Threads: wall time | threads | peak memory |"
    )
    print("|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---|---|---:|---:|---:|---:|")
    func verdict(_ cell: Cell?, _ size: Int) -> String {
      guard let ratio = cell.map({ $0.wallNanoseconds / 1e6 / ideal }) else { return "—" }
      guard size == 10_000 else { return String(format: "%.2f×", ratio) }
      return String(format: "%.2f×", ratio) + (ratio <= 3 ? " (≤ 3×: MET)" : " (≤ 3×: MISSED)")
    }
    func versusGo(_ cell: Cell?, _ size: Int) -> String {
      guard let cell, let goTime = go[size], goTime > 0 else { return "—" }
      let ratio = cell.wallNanoseconds / goTime
      guard judgedAgainstGo.contains(size) else { return String(format: "%.2f×", ratio) }
      return String(
        format: "%.2f× (≤ %.1f×: %@)", ratio, goTarget, ratio <= goTarget ? "MET" : "MISSED")
    }
    for size in sizes {
      let co = coroutines[size]
      let sh = shared[size]
      let th = threads[size]
      let goCell = go[size].map { String(format: "%.1f ms", $0 / 1e6) } ?? "—"
      print(
        "| \(size) | \(ms(co)) | \(co.map { "\($0.threads)" } ?? "—") | \(mib(co)) | "
          + "\(perTask(co, size)) | \(verdict(co, size)) | \(versusGo(co, size)) | \(ms(sh)) | "
          + "\(mib(sh)) | \(perTask(sh, size)) | \(verdict(sh, size)) | \(versusGo(sh, size)) | "
          + "\(goCell) | \(th == nil ? "did not run" : ms(th)) | "
          + "\(th.map { "\($0.threads)" } ?? "—") | \(th == nil ? "—" : mib(th)) |")
    }
  }

  /// Peak memory added per task, in KiB.
  private static func perTask(_ cell: Cell?, _ size: Int) -> String {
    cell.map { String(format: "%.2f KiB", max($0.peakBytes, 0) / 1024 / Double(size)) } ?? "—"
  }

  private static func ms(_ cell: Cell?) -> String {
    cell.map { String(format: "%.1f ms", $0.wallNanoseconds / 1e6) } ?? "—"
  }
  private static func mib(_ cell: Cell?) -> String {
    cell.map { String(format: "%.1f MiB", max($0.peakBytes, 0) / 1_048_576) } ?? "—"
  }

  /// Writes the plot (wall time and peak memory against N, log scales) as an SVG.
  static func writePlot(
    coroutines: [Int: Cell], shared: [Int: Cell], threads: [Int: Cell], go: [Int: Double],
    to url: URL
  ) throws {
    let goCells = go.mapValues { Cell(wallNanoseconds: $0, threads: 1, peakBytes: 0) }
    let panelWidth = 360.0
    let panelHeight = 240.0
    let margin = 56.0
    var svg = """
      <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(2 * panelWidth + 3 * margin))" \
      height="\(Int(panelHeight + 2 * margin))" font-family="sans-serif" font-size="12">
      <rect width="100%" height="100%" fill="white"/>

      """
    let decades = log10(Double(sizes.last!)) - log10(Double(sizes.first!))
    func panel(
      _ index: Int, title: String, unit: String, showsGo: Bool, value: (Cell) -> Double
    ) {
      let left = margin + Double(index) * (panelWidth + margin)
      let top = margin
      let all =
        (coroutines.values.map(value) + shared.values.map(value) + threads.values.map(value)
        + (showsGo ? goCells.values.map(value) : []))
        .filter { $0 > 0 }
      let low = pow(10, floor(log10(all.min() ?? 1)))
      let high = pow(10, ceil(log10(all.max() ?? 10)))
      let x = { (n: Int) in
        left + (log10(Double(n)) - log10(Double(sizes.first!))) / decades * panelWidth
      }
      let y = { (v: Double) in
        top + panelHeight - (log10(max(v, low)) - log10(low)) / (log10(high) - log10(low))
          * panelHeight
      }
      svg +=
        "<text x=\"\(left + panelWidth / 2)\" y=\"\(top - 20)\" text-anchor=\"middle\" "
        + "font-weight=\"bold\">\(title)</text>\n"
      svg +=
        "<rect x=\"\(left)\" y=\"\(top)\" width=\"\(panelWidth)\" height=\"\(panelHeight)\" "
        + "fill=\"none\" stroke=\"#888\"/>\n"
      for size in sizes {
        svg +=
          "<text x=\"\(x(size))\" y=\"\(top + panelHeight + 16)\" text-anchor=\"middle\">"
          + "\(size)</text>\n"
      }
      var tick = low
      while tick <= high * 1.0001 {
        svg +=
          "<line x1=\"\(left)\" x2=\"\(left + panelWidth)\" y1=\"\(y(tick))\" y2=\"\(y(tick))\" "
          + "stroke=\"#eee\"/>\n"
        svg +=
          "<text x=\"\(left - 6)\" y=\"\(y(tick) + 4)\" text-anchor=\"end\">"
          + "\(tick >= 1 ? String(Int(tick)) : String(tick))</text>\n"
        tick *= 10
      }
      svg +=
        "<text x=\"\(left + panelWidth / 2)\" y=\"\(top + panelHeight + 34)\" "
        + "text-anchor=\"middle\">tasks (log)</text>\n"
      svg +=
        "<text x=\"\(left - 44)\" y=\"\(top + panelHeight / 2)\" text-anchor=\"middle\" "
        + "transform=\"rotate(-90 \(left - 44) \(top + panelHeight / 2))\">\(unit) (log)</text>\n"
      var lines = [
        (coroutines, "#1f77b4", "coroutines (1 thread)", 0),
        (shared, "#2ca02c", "coroutines, shared stacks", 1), (threads, "#d62728", "threads", 2),
      ]
      if showsGo, !goCells.isEmpty { lines.append((goCells, "#7f7f7f", "Go, GOMAXPROCS=1", 3)) }
      for (cells, colour, label, row) in lines {
        let points = sizes.compactMap { size in cells[size].map { (size, value($0)) } }
        let path = points.map { "\(x($0.0)),\(y($0.1))" }.joined(separator: " ")
        svg +=
          "<polyline points=\"\(path)\" fill=\"none\" stroke=\"\(colour)\" stroke-width=\"2\"/>\n"
        for (size, v) in points {
          svg += "<circle cx=\"\(x(size))\" cy=\"\(y(v))\" r=\"3\" fill=\"\(colour)\"/>\n"
        }
        let legendY = top + 14 + Double(row) * 16
        svg +=
          "<line x1=\"\(left + 8)\" x2=\"\(left + 28)\" y1=\"\(legendY - 4)\" "
          + "y2=\"\(legendY - 4)\" stroke=\"\(colour)\" stroke-width=\"2\"/>\n"
        svg += "<text x=\"\(left + 32)\" y=\"\(legendY)\">\(label)</text>\n"
      }
    }
    panel(0, title: "Wall time, \(waits) waits of 1 ms per task", unit: "ms", showsGo: true) {
      $0.wallNanoseconds / 1e6
    }
    panel(1, title: "Peak resident memory added", unit: "MiB", showsGo: false) {
      max($0.peakBytes, 1) / 1_048_576
    }
    svg +=
      "<text x=\"\(margin)\" y=\"\(panelHeight + 2 * margin - 4)\" fill=\"#555\">"
      + "Threads beyond \(threadCap) did not run. Written by `make bench`.</text>\n</svg>\n"
    try svg.write(to: url, atomically: true, encoding: .utf8)
  }
}
