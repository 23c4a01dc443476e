import CUContext
import Testing

@testable import Coroutines

@Suite struct BackendProbeTests {
  @Test func swapcontextStartsAMadeContextAndKeepsEachSidesState() {
    #expect(cu_backend_probe(0) == Int32(CU_PROBE_PASSED))
  }

  #if arch(x86_64)
    @Test func fastSwitchStartsAMadeContextAndKeepsEachSidesState() {
      #expect(cu_backend_probe(1) == Int32(CU_PROBE_PASSED))
    }
  #endif

  @Test func anUnknownBackendIsReportedUnavailable() {
    #expect(cu_backend_probe(7) == Int32(CU_PROBE_UNAVAILABLE))
  }
}
