// The client kernels as a qconform plugin: `qconform run --plugin libclient_plugin.so`.
#include "client_backend.hpp"

#include <qconform/plugin.hpp>

#include <memory>
#include <vector>

namespace {

std::vector<std::unique_ptr<qc::Backend>> client_backends() {
  std::vector<std::unique_ptr<qc::Backend>> v;
  v.push_back(std::make_unique<client::ClientBackend>());
  return v;
}

}  // namespace

QCONFORM_PLUGIN("client-kernels", client_backends)
