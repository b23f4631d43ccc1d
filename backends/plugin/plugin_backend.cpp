#include "backends/plugin/plugin_backend.hpp"

#include "qconform/error.hpp"
#include "qconform/plugin.h"
#include "qconform/wire.hpp"

#include <dlfcn.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace qc {
namespace {

constexpr std::size_t kReasonSize = 4096;

class PluginBackend : public Backend {
 public:
  PluginBackend(const qconform_backend_v1& b, std::string where) : b_(b), where_(std::move(where)) {
    const auto j = nlohmann::json::parse(b.facts_json ? b.facts_json : "{}", nullptr, false);
    if (j.is_object())
      for (const auto& [k, v] : j.items())
        if (v.is_string()) facts_[k] = v.get<std::string>();
    facts_["plugin"] = where_;
  }
  std::string name() const override { return b_.name; }
  std::string description() const override { return b_.description ? b_.description : ""; }
  std::string claim() const override { return b_.claim ? b_.claim : ""; }
  std::map<std::string, std::string> facts() const override { return facts_; }

  Availability availability() const override {
    char reason[kReasonSize] = {};
    const bool ok = b_.availability(b_.self, reason, sizeof reason) != 0;
    return {ok, reason};
  }

  Availability supports(const OpRequest& op) const override {
    const wire::Message m = wire::encode_op(op);
    std::vector<Shape> shapes;
    const std::vector<qconform_tensor_view> views = views_of(m, shapes);
    char reason[kReasonSize] = {};
    const bool ok = b_.supports(b_.self, m.json.c_str(), views.data(), views.size(), reason, sizeof reason) != 0;
    return {ok, reason};
  }

  Tensor run(const OpRequest& op) override {
    const wire::Message m = wire::encode_op(op);
    std::vector<Shape> shapes;
    const std::vector<qconform_tensor_view> views = views_of(m, shapes);
    qconform_run_result r{};
    b_.run(b_.self, m.json.c_str(), views.data(), views.size(), &r);
    // Copy what the plugin gave, then let it free its buffers whatever happens.
    std::string error;
    Tensor out;
    if (r.status != 0) {
      error = r.message ? r.message : "the plugin's run failed without a message";
    } else {
      const auto t = parse_dtype(r.output.dtype ? r.output.dtype : "");
      if (!t || r.output.rank < 0 || (r.output.rank > 0 && !r.output.shape)) {
        error = "the plugin returned a malformed tensor";
      } else {
        out = Tensor(*t, Shape(r.output.shape, r.output.shape + r.output.rank));
        if (out.bytes().size() != r.output.bytes)
          error = "the plugin returned " + std::to_string(r.output.bytes) + " bytes for a " +
                  std::string(qc::name(*t)) + " " + shape_str(out.shape()) + " tensor";
        else if (r.output.bytes)
          std::memcpy(out.bytes().data(), r.output.data, r.output.bytes);
      }
    }
    if (b_.release) b_.release(b_.self, &r);
    if (!error.empty()) throw std::runtime_error(error);
    return out;
  }

 private:
  static std::vector<qconform_tensor_view> views_of(const wire::Message& m, std::vector<Shape>& shapes) {
    std::vector<qconform_tensor_view> v;
    shapes.reserve(m.tensors.size());
    for (const Tensor& t : m.tensors) {
      shapes.push_back(t.shape());
      v.push_back({qc::name(t.dtype()).data(), static_cast<int32_t>(t.rank()), shapes.back().data(), t.bytes().data(),
                   t.bytes().size()});
    }
    return v;
  }

  qconform_backend_v1 b_;
  std::string where_;
  std::map<std::string, std::string> facts_;
};

}  // namespace

LoadedPlugin load_plugin(const std::filesystem::path& path) {
  const std::string where = "plugin " + path.string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw InputError(where + ": no such file");
  // RTLD_LOCAL: the plugin's own copy of the core stays its own. The library is never closed: its
  // backends live as long as the process.
  void* lib = ::dlopen(std::filesystem::absolute(path).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) throw InputError(where + ": cannot load: " + ::dlerror());
  auto entry = reinterpret_cast<qconform_plugin_entry_fn>(::dlsym(lib, QCONFORM_PLUGIN_ENTRY_SYMBOL));
  if (!entry)
    throw InputError(where + ": no entry point " QCONFORM_PLUGIN_ENTRY_SYMBOL
                             " (build it with QCONFORM_PLUGIN from <qconform/plugin.hpp>)");
  const qconform_plugin_v1* p = entry(QCONFORM_PLUGIN_ABI_VERSION);
  if (!p) throw InputError(where + ": the plugin refused to load (its entry point returned NULL)");
  if (p->abi_version != QCONFORM_PLUGIN_ABI_VERSION)
    throw InputError(where + ": built for plugin ABI version " + std::to_string(p->abi_version) +
                     ", this qconform loads version " + std::to_string(QCONFORM_PLUGIN_ABI_VERSION) +
                     "; rebuild it against this qconform");
  if (p->wire_version != static_cast<std::uint32_t>(wire::kVersion))
    throw InputError(where + ": speaks wire version " + std::to_string(p->wire_version) + ", this qconform version " +
                     std::to_string(wire::kVersion));
  LoadedPlugin out;
  out.path = path.string();
  out.name = p->plugin_name ? p->plugin_name : path.stem().string();
  if (p->presets_json) out.presets_json = p->presets_json;
  for (std::uint32_t i = 0; i < p->backend_count; ++i) {
    const qconform_backend_v1& b = p->backends[i];
    if (!b.name || !*b.name || !b.availability || !b.supports || !b.run)
      throw InputError(where + ": backend " + std::to_string(i) + " has no name or a missing function");
    out.backends.push_back(std::make_unique<PluginBackend>(b, path.string()));
  }
  if (out.backends.empty()) throw InputError(where + ": offers no backend");
  return out;
}

std::vector<std::string> plugin_paths_from_environment() {
  std::vector<std::string> out;
  const char* v = std::getenv("QCONFORM_PLUGINS");
  if (!v) return out;
  std::string s(v);
  std::size_t start = 0;
  while (start <= s.size()) {
    const std::size_t end = s.find(':', start);
    const std::string item = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!item.empty()) out.push_back(item);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

}  // namespace qc
