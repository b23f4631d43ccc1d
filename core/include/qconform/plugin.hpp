// Writing a plugin in C++: return your qc::Backend objects from one function and expand
// QCONFORM_PLUGIN with it in one .cpp file of your shared library:
//
//   #include <qconform/plugin.hpp>
//   std::vector<std::unique_ptr<qc::Backend>> my_backends() { ... }
//   QCONFORM_PLUGIN("my-kernels", my_backends)
//
// The macro exports qconform_plugin_entry (qconform/plugin.h); the adapter below decodes each request
// from the wire form, calls your backend and hands the output back. Exceptions never cross the
// boundary: an exception in run() becomes the run result's message.
#pragma once

#include "qconform/backend.hpp"
#include "qconform/plugin.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace qc::plugin {

// Preset declarations (policy-file objects) the plugin's claims may name, as a JSON array text.
struct Declarations {
  std::string presets_json;  // empty: none
};

// Builds the plugin table once (on the first call) and returns it; nullptr when the host's ABI version
// differs from this header's.
const qconform_plugin_v1* make_table(std::uint32_t host_abi_version, const char* plugin_name,
                                     const std::function<std::vector<std::unique_ptr<Backend>>()>& make_backends,
                                     const Declarations& declarations = {});

// The factory of a plugin that offers one backend, made with no arguments:
// QCONFORM_PLUGIN("name", qc::plugin::one_backend<MyBackend>).
template <class B>
std::vector<std::unique_ptr<Backend>> one_backend() {
  std::vector<std::unique_ptr<Backend>> v;
  v.push_back(std::make_unique<B>());
  return v;
}

}  // namespace qc::plugin

#define QCONFORM_PLUGIN_WITH_PRESETS(NAME, FACTORY, PRESETS_JSON)                                               \
  extern "C" __attribute__((visibility("default"))) const qconform_plugin_v1* qconform_plugin_entry(            \
      std::uint32_t host_abi_version) {                                                                         \
    return ::qc::plugin::make_table(host_abi_version, NAME, FACTORY, ::qc::plugin::Declarations{PRESETS_JSON}); \
  }

#define QCONFORM_PLUGIN(NAME, FACTORY) QCONFORM_PLUGIN_WITH_PRESETS(NAME, FACTORY, "")
