// Backends with planted faults, for the plugin tests: each supports quantize only and fails in run
// (plugin-exit0 calls exit(0); plugin-segv-on-one answers wrongly and dies on one-element inputs,
// the reproducer's).
#include "qconform/plugin.hpp"

#include <csignal>
#include <cstdlib>
#include <stdexcept>
#include <thread>

namespace {

enum class Fault { segv, hang, throws, wrong_size, exit0, segv_on_one };

class Faulty : public qc::Backend {
 public:
  Faulty(std::string name, Fault f) : name_(std::move(name)), fault_(f) {}
  std::string name() const override { return name_; }
  std::string description() const override { return "a planted fault"; }
  std::string claim() const override { return fault_ == Fault::wrong_size ? "faulty-1.0" : "onnx"; }
  qc::Availability supports(const qc::OpRequest& op) const override {
    return {std::holds_alternative<qc::QuantizeOp>(op), "quantize only"};
  }
  qc::Tensor run(const qc::OpRequest& op) override {
    const auto& q = std::get<qc::QuantizeOp>(op);
    switch (fault_) {
      case Fault::segv:
        std::raise(SIGSEGV);
        break;
      case Fault::hang:
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
      case Fault::throws:
        throw std::runtime_error("the kernel refused");
      case Fault::wrong_size:
        return qc::Tensor(q.out, {q.x.size() + 1});
      case Fault::exit0:  // an error path that ends the process "successfully"
        std::exit(0);
      case Fault::segv_on_one: {  // wrong on whole tensors, and dies on a one-element reproducer
        if (q.x.size() == 1) std::raise(SIGSEGV);
        qc::Tensor out(q.out, q.x.shape());
        for (std::int64_t i = 0; i < out.size(); ++i) out.set_int(i, i % 2 == 0 ? 7 : -7);
        return out;
      }
    }
    return {};
  }

 private:
  std::string name_;
  Fault fault_;
};

std::vector<std::unique_ptr<qc::Backend>> backends() {
  std::vector<std::unique_ptr<qc::Backend>> v;
  v.push_back(std::make_unique<Faulty>("plugin-segv", Fault::segv));
  v.push_back(std::make_unique<Faulty>("plugin-hang", Fault::hang));
  v.push_back(std::make_unique<Faulty>("plugin-throws", Fault::throws));
  v.push_back(std::make_unique<Faulty>("plugin-wrong-size", Fault::wrong_size));
  v.push_back(std::make_unique<Faulty>("plugin-exit0", Fault::exit0));
  v.push_back(std::make_unique<Faulty>("plugin-segv-on-one", Fault::segv_on_one));
  return v;
}

}  // namespace

// The plugin declares the preset its wrong-size backend claims: onnx with ties away from zero.
QCONFORM_PLUGIN_WITH_PRESETS("qconform-test-faulty", backends,
                             R"([{"preset": "faulty-1.0", "description": "a plugin's own preset",
                                 "spec": {"preset": "onnx", "rounding": "rna"}}])")
