// cpu-ref behind the plugin ABI, named "plugin-cpu-ref": the same kernel in-process and through the
// ABI must give the same results on every case (each op kind's request and output cross the C
// boundary).
#include "backends/registry.hpp"
#include "qconform/plugin.hpp"

namespace {

class Renamed : public qc::Backend {
 public:
  explicit Renamed(std::unique_ptr<qc::Backend> b) : b_(std::move(b)) {}
  std::string name() const override { return "plugin-" + b_->name(); }
  std::string description() const override { return "cpu-ref through the plugin ABI"; }
  std::string claim() const override { return b_->claim(); }
  std::map<std::string, std::string> facts() const override { return {{"route", "plugin"}}; }
  qc::Availability supports(const qc::OpRequest& op) const override { return b_->supports(op); }
  qc::Tensor run(const qc::OpRequest& op) override { return b_->run(op); }

 private:
  std::unique_ptr<qc::Backend> b_;
};

std::vector<std::unique_ptr<qc::Backend>> backends() {
  std::vector<std::unique_ptr<qc::Backend>> v;
  v.push_back(std::make_unique<Renamed>(qc::make_backend("cpu-ref")));
  return v;
}

}  // namespace

QCONFORM_PLUGIN("qconform-test-cpuref", backends)
