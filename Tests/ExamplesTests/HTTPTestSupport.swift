import Foundation
import Testing

/// The descriptors of this process that are TCP sockets with `port` at either end (the
/// server's listener and connections, and its clients' connections).
func openSockets(onPort port: UInt16) -> Set<String> {
  // Each socket's inode, from /proc/net/tcp: "sl local rem st ... uid timeout inode".
  // Read to its end: a /proc file says its size is 0, and a read by size stops at a page.
  let file = FileHandle(forReadingAtPath: "/proc/net/tcp")
  defer { try? file?.close() }
  let table = String(decoding: file?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
  var inodes: Set<String> = []
  for line in table.split(separator: "\n").dropFirst() {
    let fields = line.split(separator: " ")
    guard fields.count > 9 else { continue }
    let ports = [fields[1], fields[2]].compactMap {
      UInt16($0.split(separator: ":").last ?? "", radix: 16)
    }
    if ports.contains(port) { inodes.insert(String(fields[9])) }
  }
  let numbers = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
  var open: Set<String> = []
  for number in numbers {
    guard
      let target = try? FileManager.default.destinationOfSymbolicLink(
        atPath: "/proc/self/fd/\(number)"),
      target.hasPrefix("socket:["), inodes.contains(String(target.dropFirst(8).dropLast()))
    else { continue }
    open.insert("\(number) \(target)")
  }
  return open
}

/// The `examples` program, built beside the tests, started with some arguments as a shell
/// starts a program: no signal blocked or ignored. (Foundation's `Process` passes on the
/// spawning thread's mask, and a test runs on a thread that blocks most signals: a signal
/// then waits instead of meeting the program's dispositions.)
struct RunningProgram {
  let pid: pid_t
  let output: Int32
  /// What it printed first.
  var firstLine = ""

  init(_ arguments: [String]) throws {
    let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
      .deletingLastPathComponent().appendingPathComponent("examples").path
    try #require(
      FileManager.default.isExecutableFile(atPath: executable),
      "the examples program is built beside the tests: \(executable)")
    var ends: [Int32] = [0, 0]
    try #require(pipe(&ends) == 0)
    for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, ends[1], 1)
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var none = sigset_t()
    sigemptyset(&none)
    var all = sigset_t()
    sigfillset(&all)
    posix_spawnattr_setsigmask(&attributes, &none)
    posix_spawnattr_setsigdefault(&attributes, &all)
    posix_spawnattr_setflags(
      &attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    defer { for argument in argv { free(argument) } }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
    close(ends[1])
    guard spawned == 0 else {
      close(ends[0])
      throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EINVAL)
    }
    self.pid = pid
    output = ends[0]
    firstLine = String(decoding: read(untilNewline: true), as: UTF8.self)
  }

  /// Reads the output, up to the first newline or to its end.
  private func read(untilNewline: Bool) -> [UInt8] {
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while !(untilNewline && bytes.contains(UInt8(ascii: "\n"))) {
      let count = Glibc.read(output, &chunk, chunk.count)
      if count <= 0 { break }
      bytes += chunk[..<count]
    }
    return untilNewline ? Array(bytes.prefix { $0 != UInt8(ascii: "\n") }) : bytes
  }

  /// Sends `signal` and returns what the program printed after its first line and its exit
  /// status, once it has exited; nil (and the program killed) if it still runs 5 s later.
  func stop(with signal: Int32) -> (output: String, status: Int32)? {
    defer { close(output) }
    kill(pid, signal)
    var status: Int32 = 0
    let end = Date().addingTimeInterval(5)
    while waitpid(pid, &status, WNOHANG) == 0 {
      guard Date() < end else {
        kill(pid, SIGKILL)
        waitpid(pid, &status, 0)
        return nil
      }
      usleep(2000)
    }
    // Exited normally (the low 7 bits are the signal that ended it, if any): its status.
    let exitStatus = status & 0x7F == 0 ? (status >> 8) & 0xFF : -1
    return (String(decoding: read(untilNewline: false), as: UTF8.self), exitStatus)
  }
}
