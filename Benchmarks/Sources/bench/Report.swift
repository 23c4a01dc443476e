/// One line of the results table: a figure of ours beside the baseline it is judged against.
struct Row {
  var figure: String
  var ours: Double?
  var unit = "ns"
  var baseline: String
  var baselineValue: Double?
  /// The ratio ours/baseline must not exceed (or, with `atLeast`, must reach); nil: no target.
  var target: Double? = nil
  var atLeast = false
  /// Why the figure is missing, if it is (reported as SKIPPED).
  var note: String? = nil
  /// Why the figure could not be measured as asked, if so (reported as MISSED).
  var shortfall: String? = nil

  var ratio: Double? {
    guard let ours, let baselineValue, baselineValue > 0 else { return nil }
    return ours / baselineValue
  }

  var verdict: String {
    if note != nil { return "SKIPPED" }
    if shortfall != nil { return "MISSED" }
    guard let target, let ratio else { return "" }
    return (atLeast ? ratio >= target : ratio <= target) ? "MET" : "MISSED"
  }
}

/// Prints the rows as a Markdown table, so a run can be pasted into the Performance article.
func printTable(_ rows: [Row]) {
  print("| Figure | Ours | Baseline | Baseline value | Ratio | Target | Verdict |")
  print("|---|---:|---|---:|---:|---:|---|")
  for row in rows {
    var ours = row.note ?? row.ours.map { format($0, row.unit) } ?? "—"
    if let shortfall = row.shortfall { ours += " (\(shortfall))" }
    let baselineValue = row.baselineValue.map { format($0, row.unit) } ?? "—"
    let ratio = row.ratio.map { String(format: "%.2f×", $0) } ?? "—"
    let target =
      row.target.map { (row.atLeast ? "≥ " : "≤ ") + String(format: "%.2f×", $0) } ?? "—"
    print(
      "| \(row.figure) | \(ours) | \(row.baseline) | \(baselineValue) | \(ratio) | \(target) | \(row.verdict) |"
    )
  }
}

private func format(_ value: Double, _ unit: String) -> String {
  switch unit {
  case "ns":
    value >= 10_000 ? String(format: "%.1f µs", value / 1000) : String(format: "%.1f ns", value)
  case "KiB": String(format: "%.2f KiB", value)
  case "CPU s/s": String(format: "%.2f CPU s/s", value)
  case "req/s": String(format: "%.0f req/s", value)
  case "µs": value < 100 ? String(format: "%.2f µs", value) : String(format: "%.0f µs", value)
  default: String(format: "%.2f %@", value, unit)
  }
}
