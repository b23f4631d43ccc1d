// The client kernels as an exec runner: `qconform run --backend 'exec:client_runner'`. The protocol
// loop is qconform's (qc::exec::serve); this program only names the backend.
#include "client_backend.hpp"

#include <qconform/exec_runner.hpp>

int main() {
  client::ClientBackend backend;
  return qc::exec::serve(backend);
}
