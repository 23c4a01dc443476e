import Dispatch
import Foundation
import Synchronization

/// The servers this run has started and not yet stopped. Each runs in a process group of its
/// own (as `Process` starts it), so an interrupt at the terminal does not reach it, and it waits
/// for SIGTERM: a `make bench` stopped with Ctrl-C or SIGTERM would leave it listening. The
/// first server started installs handlers that stop every one still running, then exit.
enum StartedServers {
  /// The servers running, and whether the run is being interrupted: a server started after
  /// that (the main thread goes on while the handler exits) is stopped at once.
  private static let state = Mutex<(pids: Set<Int32>, interrupted: Bool)>(([], false))
  private static let handlers = Mutex<[any DispatchSourceSignal]>([])

  /// Notes a started server, to be stopped if this run is interrupted.
  static func add(_ process: Process) {
    installHandlersOnce()
    let pid = process.processIdentifier
    let interrupted = state.withLock { state in
      state.pids.insert(pid)
      return state.interrupted
    }
    if interrupted { kill(pid, SIGTERM) }
  }

  /// Forgets a server this run has stopped.
  static func remove(_ process: Process) {
    _ = state.withLock { $0.pids.remove(process.processIdentifier) }
  }

  private static func installHandlersOnce() {
    handlers.withLock { handlers in
      guard handlers.isEmpty else { return }
      for signalNumber in [SIGINT, SIGTERM] {
        // No SIG_IGN: an ignored signal stays ignored across exec, and the servers started
        // after this would ignore SIGTERM. libdispatch on Linux takes the signal with a handler
        // of its own, which exec resets.
        let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
        source.setEventHandler {
          let pids = state.withLock { state in
            state.interrupted = true
            return state.pids
          }
          for pid in pids { kill(pid, SIGTERM) }
          exit(128 + signalNumber)
        }
        source.resume()
        handlers.append(source)
      }
    }
  }
}
