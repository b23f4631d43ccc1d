// The plugin side of the ABI (qconform/plugin.hpp): qc::Backend objects behind the C table.
#include "qconform/error.hpp"
#include "qconform/plugin.hpp"
#include "qconform/wire.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>

namespace qc::plugin {
namespace {

void write_reason(const std::string& s, char* out, std::size_t size) {
  if (!out || size == 0) return;
  const std::size_t n = std::min(s.size(), size - 1);
  std::memcpy(out, s.data(), n);
  out[n] = '\0';
}

// The tensors of a request, copied out of the host's views.
std::vector<Tensor> tensors_of(const qconform_tensor_view* views, std::size_t count) {
  std::vector<Tensor> out;
  for (std::size_t i = 0; i < count; ++i) {
    const qconform_tensor_view& v = views[i];
    const auto t = parse_dtype(v.dtype ? v.dtype : "");
    if (!t) throw InputError("plugin: tensor " + std::to_string(i) + " has an unknown dtype");
    Tensor x(*t, Shape(v.shape, v.shape + v.rank));
    if (x.bytes().size() != v.bytes) throw InputError("plugin: tensor " + std::to_string(i) + " has the wrong size");
    if (v.bytes) std::memcpy(x.bytes().data(), v.data, v.bytes);
    out.push_back(std::move(x));
  }
  return out;
}

struct Slot {
  std::unique_ptr<Backend> backend;
  std::string name, description, claim, facts;
};

// A run's output, kept alive until the host releases it.
struct Output {
  Tensor tensor;
  std::string dtype, message;
  Shape shape;
};

int32_t availability(void* self, char* reason, std::size_t size) {
  try {
    const Availability a = static_cast<Slot*>(self)->backend->availability();
    write_reason(a.reason, reason, size);
    return a.available ? 1 : 0;
  } catch (const std::exception& e) {
    write_reason(std::string("availability() threw: ") + e.what(), reason, size);
    return 0;
  }
}

int32_t supports(void* self, const char* op_json, const qconform_tensor_view* tensors, std::size_t count, char* reason,
                 std::size_t size) {
  try {
    const OpRequest op = wire::decode_op(op_json, tensors_of(tensors, count));
    const Availability a = static_cast<Slot*>(self)->backend->supports(op);
    write_reason(a.reason, reason, size);
    return a.available ? 1 : 0;
  } catch (const std::exception& e) {
    write_reason(std::string("supports() threw: ") + e.what(), reason, size);
    return 0;
  }
}

void run(void* self, const char* op_json, const qconform_tensor_view* tensors, std::size_t count,
         qconform_run_result* result) {
  auto* out = new Output;
  result->owner = out;
  try {
    const OpRequest op = wire::decode_op(op_json, tensors_of(tensors, count));
    out->tensor = static_cast<Slot*>(self)->backend->run(op);
    out->dtype = std::string(name(out->tensor.dtype()));
    out->shape = out->tensor.shape();
    result->status = 0;
    result->output = {out->dtype.c_str(), static_cast<int32_t>(out->shape.size()), out->shape.data(),
                      out->tensor.bytes().data(), out->tensor.bytes().size()};
    result->message = nullptr;
  } catch (const std::exception& e) {
    out->message = e.what();
    result->status = 1;
    result->output = {};
    result->message = out->message.c_str();
  }
}

void release(void*, qconform_run_result* result) {
  delete static_cast<Output*>(result->owner);
  result->owner = nullptr;
}

}  // namespace

const qconform_plugin_v1* make_table(std::uint32_t host_abi_version, const char* plugin_name,
                                     const std::function<std::vector<std::unique_ptr<Backend>>()>& make_backends,
                                     const Declarations& declarations) {
  if (host_abi_version != QCONFORM_PLUGIN_ABI_VERSION) {
    // Still answer with our version, so the host can say which one we are built for.
    static const qconform_plugin_v1 other{
        QCONFORM_PLUGIN_ABI_VERSION, plugin_name, wire::kVersion, 0, nullptr, nullptr};
    return &other;
  }
  static std::once_flag once;
  static std::vector<Slot> slots;
  static std::vector<qconform_backend_v1> table;
  static std::string presets;
  static qconform_plugin_v1 plugin{};
  std::call_once(once, [&] {
    for (auto& b : make_backends()) {
      Slot s;
      s.name = b->name();
      s.description = b->description();
      s.claim = b->claim();
      s.facts = nlohmann::json(b->facts()).dump();
      s.backend = std::move(b);
      slots.push_back(std::move(s));
    }
    for (Slot& s : slots)
      table.push_back({&s, s.name.c_str(), s.description.c_str(), s.claim.c_str(), s.facts.c_str(), availability,
                       supports, run, release});
    presets = declarations.presets_json;
    plugin = {QCONFORM_PLUGIN_ABI_VERSION,
              plugin_name,
              wire::kVersion,
              static_cast<std::uint32_t>(table.size()),
              table.data(),
              presets.empty() ? nullptr : presets.c_str()};
  });
  return &plugin;
}

}  // namespace qc::plugin
