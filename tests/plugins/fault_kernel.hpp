// One quantize kernel with each fault a backend can have, served through every route a backend
// takes into qconform: compiled in (tests/harness/fault_routes_test.cpp), a plugin
// (faulty_plugin.cpp) and an exec runner (fault_runner.cpp). Python's twin is
// python/tests/data/fault_backends.py. Without a fault it is ONNX QuantizeLinear done plainly.
#pragma once

#include "qconform/backend.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>

namespace qc::testing {

enum class KernelFault {
  segv,         // raises SIGSEGV
  abort,        // std::abort (SIGABRT)
  hang,         // never answers
  exit0,        // std::exit(0): an error path that ends the process "successfully"
  exit1,        // std::exit(1)
  wrong_shape,  // one element too many
  wrong_dtype,  // i32 where i8/u8 was asked for
  throws,       // throws std::runtime_error("the kernel refused")
  huge_alloc,   // asks for 2^50 bytes (std::bad_alloc)
  segv_on_one,  // wrong on whole tensors, and dies on a one-element input (a reproducer's)
};

struct KernelFaultName {
  KernelFault fault;
  const char* name;
};

inline constexpr std::array<KernelFaultName, 10> kKernelFaults{{
    {KernelFault::segv, "segv"},
    {KernelFault::abort, "abort"},
    {KernelFault::hang, "hang"},
    {KernelFault::exit0, "exit0"},
    {KernelFault::exit1, "exit1"},
    {KernelFault::wrong_shape, "wrong-shape"},
    {KernelFault::wrong_dtype, "wrong-dtype"},
    {KernelFault::throws, "throws"},
    {KernelFault::huge_alloc, "huge-alloc"},
    {KernelFault::segv_on_one, "segv-on-one"},
}};

inline const char* kernel_fault_name(KernelFault f) {
  for (const auto& e : kKernelFaults)
    if (e.fault == f) return e.name;
  return "?";
}

class FaultKernel : public Backend {
 public:
  // Named PREFIX-FAULT (plugin-segv, exec-hang, ...).
  FaultKernel(const std::string& prefix, KernelFault f) : name_(prefix + "-" + kernel_fault_name(f)), fault_(f) {}
  std::string name() const override { return name_; }
  std::string description() const override { return "a planted fault"; }
  std::string claim() const override { return "onnx"; }
  Availability supports(const OpRequest& op) const override {
    const auto* q = std::get_if<QuantizeOp>(&op);
    if (q && q->x.dtype() == DType::f32 && q->params.granularity() == Granularity::per_tensor &&
        (q->out == DType::i8 || q->out == DType::u8))
      return {};
    return {false, "per-tensor f32 -> i8/u8 quantize only"};
  }

  Tensor run(const OpRequest& op) override {
    const auto& q = std::get<QuantizeOp>(op);
    switch (fault_) {
      case KernelFault::segv:
        std::raise(SIGSEGV);
        break;
      case KernelFault::abort:
        std::abort();
      case KernelFault::hang:
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
      case KernelFault::exit0:
        std::exit(0);
      case KernelFault::exit1:
        std::exit(1);
      case KernelFault::wrong_shape:
        return Tensor(q.out, {q.x.size() + 1});
      case KernelFault::wrong_dtype:
        return Tensor(DType::i32, q.x.shape());
      case KernelFault::throws:
        throw std::runtime_error("the kernel refused");
      case KernelFault::huge_alloc: {
        // Through a volatile pointer, so that no compiler may elide the allocation.
        static void* (*volatile allocate)(std::size_t) = &::operator new;
        void* p = allocate(std::size_t{1} << 50);
        ::operator delete(p);
        break;
      }
      case KernelFault::segv_on_one: {
        if (q.x.size() == 1) std::raise(SIGSEGV);
        Tensor out(q.out, q.x.shape());
        for (std::int64_t i = 0; i < out.size(); ++i) out.set_int(i, i % 2 == 0 ? 7 : -7);
        return out;
      }
    }
    return quantize(q);
  }

 private:
  // ONNX QuantizeLinear: round(x / s) ties to even, + zero point, saturated (NaN to the zero point).
  static Tensor quantize(const QuantizeOp& q) {
    const auto s = static_cast<float>(q.params.scales[0]);
    const std::int64_t zp = q.params.zero_points.empty() ? 0 : q.params.zero_points[0];
    const std::int64_t lo = q.out == DType::i8 ? -128 : 0, hi = q.out == DType::i8 ? 127 : 255;
    Tensor y(q.out, q.x.shape());
    for (std::int64_t i = 0; i < q.x.size(); ++i) {
      const float t = std::nearbyint(static_cast<float>(q.x.get_double(i)) / s);
      y.set_int(i, std::isnan(t)
                       ? zp
                       : std::clamp<std::int64_t>(static_cast<std::int64_t>(std::clamp(t, -1e9f, 1e9f)) + zp, lo, hi));
    }
    return y;
  }

  std::string name_;
  KernelFault fault_;
};

}  // namespace qc::testing
