// An exec runner (docs/integrate.md, "Exec runners") serving the fault kernel of fault_kernel.hpp:
//   qconform_test_fault_runner FAULT      serves exec-FAULT (exec-segv, exec-hang, ...)
#include "fault_kernel.hpp"
#include "qconform/exec_runner.hpp"

#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  for (const auto& f : qc::testing::kKernelFaults)
    if (argc == 2 && std::strcmp(argv[1], f.name) == 0) {
      qc::testing::FaultKernel kernel("exec", f.fault);
      return qc::exec::serve(kernel);
    }
  std::fprintf(stderr, "usage: %s FAULT (a fault of tests/plugins/fault_kernel.hpp)\n", argv[0]);
  return 2;
}
