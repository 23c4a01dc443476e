import Coroutines
import Foundation

/// The seed's table as a section of `make bench`, or alone with `bench seed`: every cell
/// measured, then printed, and the plot written.
extension SeedTable {
  struct Results {
    var coroutines: [Int: Cell] = [:]
    var shared: [Int: Cell] = [:]
    var threads: [Int: Cell] = [:]
    var go: Result<[Int: Double], GoProgram.GoError> = .success([:])
  }

  /// Measures every cell with `best` (the fastest of several child processes), and Go's job
  /// with as many processes.
  static func measure(processes: Int, best: (String) throws -> [Double]) throws -> Results {
    var results = Results()
    // Each cell, coroutines and threads alike, keeps the fastest of `processes` processes, as
    // the timed figures do: this host's speed swings by half from one minute to the next, and
    // a single process per cell reported the swing (40 or 60 ms for the same binary on shared
    // stacks).
    for size in sizes {
      progress("coroutines versus threads, \(size) tasks")
      results.coroutines[size] = Cell(try best("seed-coroutines-\(size)"))
      results.shared[size] = Cell(try best("seed-shared-\(size)"))
      if size <= threadCap { results.threads[size] = Cell(try best("seed-threads-\(size)")) }
    }
    progress("coroutines versus threads: Go, GOMAXPROCS=1")
    results.go = go(processes: processes)
    return results
  }

  /// Prints the table (with a line saying why Go's column is empty, if it is) and writes the
  /// plot into the documentation's resources.
  static func printSection(_ results: Results) throws {
    print("")
    print("Coroutines versus threads (the seed's table; \(CoroutineBackend.current) backend):")
    print("")
    let goTimes: [Int: Double]
    switch results.go {
    case .success(let times): goTimes = times
    case .failure(let reason):
      goTimes = [:]
      print("Go skipped: \(reason).")
      print("")
    }
    printTable(
      coroutines: results.coroutines, shared: results.shared, threads: results.threads,
      go: goTimes)
    let plot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .appendingPathComponent("../../../Docs/Coroutines.docc/Resources/coroutines-vs-threads.svg")
      .standardized
    try writePlot(
      coroutines: results.coroutines, shared: results.shared, threads: results.threads,
      go: goTimes, to: plot)
    print("")
    print("Plot written to \(plot.path).")
  }
}

extension SeedTable.Cell {
  /// A cell from the numbers its child process printed: wall time, threads, peak bytes.
  init(_ numbers: [Double]) {
    self.init(wallNanoseconds: numbers[0], threads: Int(numbers[1]), peakBytes: numbers[2])
  }
}
