// The hip backend's host side: what each variant supports, and how a request becomes kernel
// launches (kernels.hpp). All arithmetic that decides an output element happens in the kernels;
// the host only moves integers and parameters (scales are f32 or f16 values, exact in float).
#include "backends/hip/backend.hpp"

#include "backends/hip/hip_compat.hpp"
#include "backends/hip/kernels.hpp"
#include "backends/hip/plan.hpp"
#include "qconform/child_process.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>

#ifndef QCONFORM_HIP_DEVICE_FLAGS
#define QCONFORM_HIP_DEVICE_FLAGS "unknown"
#endif
#ifndef QCONFORM_HIP_DEVICE_TARGETS
#define QCONFORM_HIP_DEVICE_TARGETS "unknown"
#endif

namespace qc {
namespace {

#if defined(QCONFORM_HIP_ON_CUDA)
constexpr const char* kRuntime = "CUDA";
constexpr const char* kDeviceCount = "cudaGetDeviceCount";
#else
constexpr const char* kRuntime = "HIP";
constexpr const char* kDeviceCount = "hipGetDeviceCount";
#endif

std::string error_text(hipError_t e) { return std::string(hipGetErrorName(e)) + " (" + hipGetErrorString(e) + ")"; }

// A kernel fault (an illegal address, a trap, a launch failure) is "sticky": the context is left
// unusable and every later runtime call in the process fails with the same error (CUDA Runtime API,
// cudaError_t: cudaErrorIllegalAddress "...the process must be terminated and relaunched"; HIP
// follows it). hipGetLastError clears an ordinary error (an invalid argument, out of memory); if the
// device still cannot synchronise after that, the context is lost, and so is every later (case,
// variant) of this process: BackendFault::Kind::device_lost lets the runner say so once instead of
// reporting each later case as a crash of its own. Isolated children each have a context of their own.
void check(hipError_t e, const char* what) {
  if (e == hipSuccess) return;
  const std::string text = std::string("hip backend: ") + what + " failed: " + error_text(e);
  (void)hipGetLastError();
  if (const hipError_t after = hipDeviceSynchronize(); after != hipSuccess)
    throw BackendFault(BackendFault::Kind::device_lost,
                       text + "; the device is unusable in this process (" + error_text(after) + ")");
  throw std::runtime_error(text);
}

// ---- The device -------------------------------------------------------------------------------
//
// A process that has initialised the CUDA runtime cannot use it in a child it forks afterwards
// (PyTorch calls that "poisoning fork": docs, notes/multiprocessing.html, "Poison fork in
// multiprocessing"; its torch.cuda.is_available() asks NVML instead where
// PYTORCH_NVML_BASED_CUDA_CHECK=1, for that reason), and `qconform run
// --isolate` or `--timeout` forks a child per backend call (harness/runner.cpp, call_isolated).
// Any runtime call initialises it, cudaGetDeviceCount included. So the runtime is touched in two
// places only:
//   availability(), facts()  ask a short-lived child of their own, which probes the device and
//                            reports over a pipe; the answer is cached per process (and inherited
//                            by the runner's children), and this process stays uninitialised;
//   run()                    initialises the runtime lazily, in the process that runs the kernels:
//                            the process itself in a plain run, each call's child under --isolate.
// Once run() has initialised the runtime here, a later first availability() asks this process's
// own probe instead: a prober forked now could not use the runtime.

struct DeviceProbe {
  Availability availability;
  std::map<std::string, std::string> facts;
  bool mma = false;  // the tensor-core GEMM path can run here
};

std::string version_text(int v) {  // 13000 -> "13.0" (CUDA and HIP encode major * 1000 + minor * 10)
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

// Set before the first runtime call of this process (a forked child starts with its parent's value).
std::atomic<bool> runtime_used{false};

// Asks the runtime, in this process.
DeviceProbe probe_device() {
  runtime_used = true;
  DeviceProbe p;
  int count = 0;
  const hipError_t e = hipGetDeviceCount(&count);
  if (e != hipSuccess) {
    p.availability = {false, std::string("no ") + kRuntime + " device: " + kDeviceCount + " returned " + error_text(e)};
    return p;
  }
  if (count == 0) {
    p.availability = {false, std::string("no ") + kRuntime + " device: " + kDeviceCount + " found 0 devices"};
    return p;
  }
  hipDeviceProp_t prop;
  if (const hipError_t pe = hipGetDeviceProperties(&prop, 0); pe != hipSuccess) {
    p.availability = {false, std::string("device 0: hipGetDeviceProperties returned ") + error_text(pe)};
    return p;
  }
  const std::string cc = std::to_string(prop.major) + "." + std::to_string(prop.minor);
#if defined(QCONFORM_HIP_ON_CUDA)
  if (prop.major < 8) {
    p.availability = {false, std::string(prop.name) + " is sm_" + std::to_string(prop.major * 10 + prop.minor) +
                                 "; the kernels are built for " + QCONFORM_HIP_DEVICE_TARGETS};
    return p;
  }
  p.mma = qc::gpu::gemm_has_mma_path();
#endif
  int driver = 0, runtime = 0;
  (void)hipDriverGetVersion(&driver);
  (void)hipRuntimeGetVersion(&runtime);
  p.facts = {{"platform", kRuntime},
             {"gpu", prop.name},
             {"compute_capability", cc},
             {"multiprocessors", std::to_string(prop.multiProcessorCount)},
             {"global_memory_mib", std::to_string(prop.totalGlobalMem >> 20)},
             {"driver_version", version_text(driver)},
             {"runtime_version", version_text(runtime)},
             {"device_code", QCONFORM_HIP_DEVICE_TARGETS},
             {"device_compile_flags", QCONFORM_HIP_DEVICE_FLAGS}};
  return p;
}

// A probe on the pipe: availability, mma, the reason, then key and value of each fact, each string
// as its length (8 bytes) and its bytes. Both ends are this binary, so native byte order is fine.
void put_string(std::string& out, const std::string& s) {
  const std::uint64_t n = s.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  out += s;
}
std::string serialize(const DeviceProbe& p) {
  std::string out{static_cast<char>(p.availability.available), static_cast<char>(p.mma)};
  put_string(out, p.availability.reason);
  for (const auto& [key, value] : p.facts) {
    put_string(out, key);
    put_string(out, value);
  }
  return out;
}
std::optional<DeviceProbe> deserialize(const std::string& in) {
  if (in.size() < 2) return std::nullopt;
  std::size_t pos = 2;
  auto get_string = [&](std::string& s) {
    std::uint64_t n = 0;
    if (in.size() - pos < sizeof n) return false;
    std::memcpy(&n, in.data() + pos, sizeof n);
    pos += sizeof n;
    if (in.size() - pos < n) return false;
    s.assign(in, pos, n);
    pos += n;
    return true;
  };
  DeviceProbe p;
  p.availability.available = in[0] != 0;
  p.mma = in[1] != 0;
  if (!get_string(p.availability.reason)) return std::nullopt;
  while (pos < in.size()) {
    std::string key, value;
    if (!get_string(key) || !get_string(value)) return std::nullopt;
    p.facts[key] = value;
  }
  return p;
}

// How long the prober may take. Creating the first context can take seconds on a machine with
// many GPUs; a prober that hangs (a driver in a bad state) must not hang the run.
constexpr int kProbeTimeoutMs = 60000;

DeviceProbe unavailable(const std::string& why) { return {{false, "GPU probe: " + why}, {}, false}; }

// Asks the runtime in a forked child, so that this process never initialises it.
DeviceProbe probe_in_child() {
  const ChildResult c = run_in_child(
      [](int fd) {
        const std::string answer = serialize(probe_device());
        return write_all(fd, answer.data(), answer.size()) ? 0 : 1;
      },
      kProbeTimeoutMs / 1000.0);
  if (!c.started) return unavailable(c.error);
  if (c.timed_out) return unavailable("no answer within " + std::to_string(kProbeTimeoutMs / 1000) + " s");
  if (c.signal) return unavailable("the probing process died of " + signal_text(c.signal));
  if (const std::optional<DeviceProbe> p = deserialize(c.answer)) return *p;
  return unavailable("the probing process exited with status " + std::to_string(c.exit_status) + " without an answer");
}

// The device as this process's own runtime sees it (initialising the runtime here): for run().
const DeviceProbe& device_here() {
  static const DeviceProbe p = probe_device();
  return p;
}

// The device for availability() and facts(), without initialising the runtime here.
const DeviceProbe& device_probed() {
  static const DeviceProbe p = runtime_used ? device_here() : probe_in_child();
  return p;
}

// ---- The GPU executor of plan.hpp -----------------------------------------------------------------

template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t n) : n_(n) {
    check(hipMalloc(&p_, std::max<std::size_t>(n, 1) * sizeof(T)), "hipMalloc");
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr; }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(DeviceBuffer&&) = delete;
  ~DeviceBuffer() {
    if (p_ != nullptr) (void)hipFree(p_);
  }
  T* get() const { return p_; }
  std::vector<T> download() const {
    std::vector<T> v(n_);
    if (n_ != 0) check(hipMemcpy(v.data(), p_, n_ * sizeof(T), hipMemcpyDeviceToHost), "hipMemcpy to host");
    return v;
  }

 private:
  T* p_ = nullptr;
  std::size_t n_;
};

// Every kernel on one stream; the plan synchronizes before it frees or reads back buffers.
class DeviceExec {
 public:
  template <class T>
  using Buffer = DeviceBuffer<T>;

  DeviceExec() { check(hipStreamCreate(&s_), "hipStreamCreate"); }
  DeviceExec(const DeviceExec&) = delete;
  DeviceExec& operator=(const DeviceExec&) = delete;
  ~DeviceExec() { (void)hipStreamDestroy(s_); }

  template <class T>
  Buffer<T> alloc(std::size_t n) {
    return Buffer<T>(n);
  }
  template <class T>
  Buffer<T> upload(const std::vector<T>& v) {
    Buffer<T> b(v.size());
    if (!v.empty())
      check(hipMemcpy(b.get(), v.data(), v.size() * sizeof(T), hipMemcpyHostToDevice), "hipMemcpy to device");
    return b;
  }
  void sync() { check(hipStreamSynchronize(s_), "kernel execution (hipStreamSynchronize)"); }

  void quantize(const float* x, std::int64_t n, const float* scales, const std::int32_t* zps, gpu::ParamLayout l,
                bool half_scale, std::int32_t lo, std::int32_t hi, const gpu::Recipe& r, std::int32_t* q) {
    check(gpu::launch_quantize(x, n, scales, zps, l, half_scale, lo, hi, r, q, s_), "quantize launch");
  }
  void dequantize(const std::int32_t* q, std::int64_t n, const float* scales, const std::int32_t* zps,
                  gpu::ParamLayout l, bool half_scale, const gpu::Recipe& r, bool f16, void* y) {
    check(gpu::launch_dequantize(q, n, scales, zps, l, half_scale, r, f16, y, s_), "dequantize launch");
  }
  void requantize(const std::int32_t* acc, std::int64_t n, float s_in, const float* w, bool w_per_channel,
                  const std::int32_t* zps, bool zp_per_channel, gpu::ParamLayout channel, float s_out, std::int32_t lo,
                  std::int32_t hi, gpu::Rounding rounding, std::int32_t* y) {
    check(gpu::launch_requantize(acc, n, s_in, w, w_per_channel, zps, zp_per_channel, channel, s_out, lo, hi, rounding,
                                 y, s_),
          "requantize launch");
  }
  void unpack_int4(const std::uint8_t* packed, std::int64_t n, std::int64_t length, std::int64_t inner, bool low_first,
                   bool is_signed, std::int32_t* values) {
    check(gpu::launch_unpack_int4(packed, n, length, inner, low_first, is_signed, values, s_), "unpack_int4 launch");
  }
  void to_operand(const std::int32_t* src, std::int64_t rows, std::int64_t K, std::int64_t row_stride,
                  std::int64_t k_stride, std::int32_t shift, std::int8_t* dst, std::int64_t Kp) {
    check(gpu::launch_to_operand(src, rows, K, row_stride, k_stride, shift, dst, Kp, s_), "operand launch");
  }
  void row_sums(const gpu::DenseA& a, std::int64_t M, std::int64_t K, std::int32_t* rows) {
    check(gpu::launch_row_sums(a, M, K, rows, s_), "row sums launch");
  }
  void row_sums(const gpu::ConvA& a, std::int64_t M, std::int64_t K, int groups, std::int32_t* rows) {
    check(gpu::launch_row_sums(a, M, K, groups, rows, s_), "row sums launch");
  }
  void col_sums(const std::int8_t* b, std::int64_t rows, std::int64_t K, std::int64_t Kp, std::int32_t* cols) {
    check(gpu::launch_col_sums(b, rows, K, Kp, cols, s_), "column sums launch");
  }
  gpu::GemmPath gemm_path(std::int64_t M, std::int64_t N) const {
    if (const char* f = std::getenv("QCONFORM_HIP_GEMM")) {
      if (std::strcmp(f, "dp4a") == 0) return gpu::GemmPath::dp4a;
      if (std::strcmp(f, "mma") == 0 && device_here().mma) return gpu::GemmPath::mma;
    }
    // The tensor-core tile is 128 x 128: below a 64 x 64 problem most of it would be padding.
    return device_here().mma && M >= 64 && N >= 64 ? gpu::GemmPath::mma : gpu::GemmPath::dp4a;
  }
  void gemm(const gpu::DenseA& a, const gpu::GemmArgs& p, gpu::GemmPath path) {
    check(gpu::launch_gemm(a, p, path, s_), "GEMM launch");
  }
  void conv2d(const gpu::ConvA& a, const gpu::GemmArgs& p) { check(gpu::launch_conv2d(a, p, s_), "conv2d launch"); }

 private:
  hipStream_t s_ = nullptr;
};

// ---- What each variant supports --------------------------------------------------------------------

bool is_half_or_single(DType t) { return t == DType::f32 || t == DType::f16; }
bool float_input(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }
bool is_int4(DType t) { return t == DType::i4 || t == DType::u4; }

bool multiplier_ok(float s_a, float s_w, float s_out) {
  const float m = gpu::requantize_multiplier(s_a, s_w, s_out);
  return std::isfinite(m) && m > 0;
}

Availability check_activation(const ActivationOperand& a) {
  if (a.quantization != ActivationQuantization::static_params)
    return {false, "dynamic activation quantization is done before the kernels (not by them)"};
  const DType f = gpu::plan::activation_format(a);
  if (f != DType::u8 && f != DType::i8) return {false, "activations must be u8 or s8"};
  if (!is_int(a.values.dtype()) && !float_input(a.values.dtype()))
    return {false, "float activations must be f32, f16 or bf16"};
  if (a.params.granularity() != Granularity::per_tensor) return {false, "activations must be quantized per tensor"};
  if (a.params.scale_dtype != DType::f32) return {false, "the GEMM/conv kernels take f32 activation scales"};
  return {};
}

Availability check_weights(const QWeights& w, int n_axis) {
  const DType f = gpu::plan::weight_format(w);
  if (f != DType::i8 && f != DType::u8 && !is_int4(f)) return {false, "weights must be s8, u8, s4 or u4"};
  if (w.packing && !is_int4(w.format)) return {false, "packed weights must be i4 or u4"};
  if (!w.packing && !is_int(w.values.dtype()) && !float_input(w.values.dtype()))
    return {false, "float weights must be f32, f16 or bf16"};
  if (!is_half_or_single(w.params.scale_dtype)) return {false, "weight scales must be f32 or f16"};
  if (w.params.granularity() == Granularity::blocked)
    return {false, "blocked (K-group) weight scales are not supported"};
  if (w.params.granularity() == Granularity::per_axis &&
      gpu::plan::resolve_axis(*w.params.axis, gpu::plan::weight_shape(w)) != n_axis)
    return {false, "per-channel weight scales must run along the output channels"};
  return {};
}

Availability check_output(const OutputStage& out, const std::optional<Tensor>& bias, const ActivationOperand& a,
                          const QWeights& w, HipVariant v) {
  const bool float_bias = bias && is_float(bias->dtype());
  if (bias && !float_bias && bias->dtype() != DType::i32) return {false, "bias must be i32 or float"};
  switch (out.kind) {
    case OutputKind::int32:
      if (float_bias) return {false, "a float bias cannot be added to an int32 output"};
      return {};
    case OutputKind::dequantized:
      if (out.format != DType::f32 && out.format != DType::f16) return {false, "dequantized outputs are f32 or f16"};
      // The oracle's dequantized output stage has no fused multiply-add form (oracles/qlinear.hpp).
      if (float_bias && v == HipVariant::fma)
        return {false, "hip-fma would fuse float(acc) * s + bias, which no preset can state"};
      return {};
    case OutputKind::requantized: {
      if (!is_int(out.format) || info(out.format).bits > 16 || is_int4(out.format))
        return {false, "requantized outputs are i8, u8, i16 or u16"};
      if (float_bias) return {false, "a float bias with a requantized output is defined for exact requantization only"};
      const auto sa = static_cast<float>(a.params.scales[0]);
      for (double sw : w.params.scales)
        if (!multiplier_ok(sa, static_cast<float>(sw), static_cast<float>(out.scale)))
          return {false, "the f32 requantize multiplier overflows or underflows"};
      return {};
    }
  }
  return {false, "unknown output kind"};
}

std::string recipe_text(const gpu::Recipe& r) {
  std::string q = r.quantize == gpu::QuantizeForm::divide       ? "round(x / s) + zp"
                  : r.quantize == gpu::QuantizeForm::reciprocal ? "round(x * (1/s)) + zp"
                                                                : "round(x * (1/s) + zp)";
  std::string d = r.dequantize == gpu::DequantizeForm::subtract_then_multiply ? "float(q - zp) * s" : "q*s - zp*s";
  std::string round = r.rounding == gpu::Rounding::roundf ? "roundf (ties away)" : "__float2int_rn (ties to even)";
  return "quantize " + q + ", dequantize " + d + ", rounding " + round +
         (r.half_arithmetic ? ", binary16 arithmetic for f16 scales" : ", f32 arithmetic");
}

}  // namespace

namespace {

// The variants, their backend names and their claims (docs/hip.md), in the registry's order.
struct VariantRow {
  HipVariant variant;
  const char* name;
  const char* claim;
};
constexpr VariantRow kVariants[] = {
    {HipVariant::div, "hip", "gpu-div"},           {HipVariant::recip, "hip-recip", "gpu-recip"},
    {HipVariant::f16, "hip-f16", "gpu-f16"},       {HipVariant::fma, "hip-fma", "gpu-fma"},
    {HipVariant::nofma, "hip-nofma", "gpu-nofma"}, {HipVariant::roundf, "hip-roundf", "gpu-roundf"},
};
constexpr bool one_row_per_enumerator_in_order() {
  for (std::size_t i = 0; i < std::size(kVariants); ++i)
    if (static_cast<std::size_t>(kVariants[i].variant) != i) return false;
  return std::size(kVariants) == static_cast<std::size_t>(HipVariant::roundf) + 1;
}
static_assert(one_row_per_enumerator_in_order());
const VariantRow& row_of(HipVariant v) { return kVariants[static_cast<std::size_t>(v)]; }

}  // namespace

std::vector<HipVariant> all_hip_variants() {
  std::vector<HipVariant> v;
  for (const VariantRow& r : kVariants) v.push_back(r.variant);
  return v;
}

std::string hip_variant_name(HipVariant v) { return row_of(v).name; }
std::string hip_variant_claim(HipVariant v) { return row_of(v).claim; }

gpu::Recipe hip_recipe(HipVariant v) {
  gpu::Recipe r;
  switch (v) {
    case HipVariant::div:
      break;
    case HipVariant::recip:
      r.quantize = gpu::QuantizeForm::reciprocal;
      break;
    case HipVariant::f16:
      r.half_arithmetic = true;
      break;
    case HipVariant::fma:
    case HipVariant::nofma:
      r.quantize = gpu::QuantizeForm::affine;
      r.dequantize = gpu::DequantizeForm::affine;
      r.fma = v == HipVariant::fma;
      break;
    case HipVariant::roundf:
      r.rounding = gpu::Rounding::roundf;
      break;
  }
  return r;
}

Availability hip_device_availability() { return device_probed().availability; }

bool hip_runtime_used_in_this_process() { return runtime_used; }

std::string HipBackend::description() const {
  return std::string("HIP kernels (") + QCONFORM_HIP_PLATFORM_NAME + "): " + recipe_text(hip_recipe(v_)) +
         "; int8 GEMM/conv by dp4a/sdot4 tiles" + (qc::gpu::gemm_has_mma_path() ? " and mma.sync tensor cores" : "");
}

std::map<std::string, std::string> HipBackend::facts() const {
  const DeviceProbe& d = device_probed();
  std::map<std::string, std::string> f = d.facts;
  const gpu::Recipe r = hip_recipe(v_);
  f["numerics"] = recipe_text(r);
  // Each IEEE operation is an explicit _rn intrinsic, so the build's contraction flag cannot fuse
  // them; the variant's FMA (if any) is an explicit __fmaf_rn.
  f["contraction"] = r.fma ? "on: the affine forms are one __fmaf_rn each" : "off: every multiply and add rounds once";
  f["fast_math"] = "off (no --use_fast_math; IEEE division, reciprocal and f32 denormals)";
  f["gemm_path"] = d.mma ? "mma.sync m16n8k32 s8 tensor cores when M, N >= 64 (QCONFORM_HIP_GEMM=dp4a|mma "
                           "overrides), else dp4a; conv2d: dp4a implicit GEMM"
                         : "dp4a/sdot4 tiles";
  return f;
}

Availability HipBackend::supports(const OpRequest& op) const {
  if (const auto* q = std::get_if<QuantizeOp>(&op)) {
    if (!float_input(q->x.dtype())) return {false, "the hip kernels quantize f32, f16 or bf16 inputs"};
    if (!is_half_or_single(q->params.scale_dtype)) return {false, "the hip kernels take f32 or f16 scales"};
    if (!is_int(q->out) || info(q->out).bits > 16) return {false, "the hip kernels quantize to 4, 8 or 16 bits"};
    return {};
  }
  if (const auto* d = std::get_if<DequantizeOp>(&op)) {
    if (!is_int(d->q.dtype())) return {false, "the hip kernels dequantize integers (no float8 inputs)"};
    if (d->out != DType::f32 && d->out != DType::f16) return {false, "the hip kernels dequantize to f32 or f16"};
    if (!is_half_or_single(d->params.scale_dtype)) return {false, "the hip kernels take f32 or f16 scales"};
    return {};
  }
  if (const auto* r = std::get_if<RequantizeOp>(&op)) {
    if (!is_half_or_single(r->params.scale_dtype)) return {false, "the hip kernels take f32 or f16 scales"};
    if (info(r->acc.dtype()).bits > 32) return {false, "accumulators must fit int32"};
    // The float clamp's bounds are exact for outputs of up to 16 bits (an int32 bound rounds in f32).
    if (info(r->out).bits > 16) return {false, "the hip kernels requantize to 4, 8 or 16 bits"};
    for (double w : r->params.weight_scales)
      if (!multiplier_ok(static_cast<float>(r->params.input_scale), static_cast<float>(w),
                         static_cast<float>(r->params.output_scale)))
        return {false, "the f32 requantize multiplier overflows or underflows"};
    return {};
  }
  if (const auto* g = std::get_if<QGemmOp>(&op)) {
    if (logical_shape(g->b).size() != 2) return {false, "the hip GEMM kernel takes one 2-D B (no batched B)"};
    if (const Availability a = check_activation(g->a); !a.available) return a;
    if (const Availability w = check_weights(g->b, g->b_layout == WeightLayout::k_by_n ? 1 : 0); !w.available) return w;
    return check_output(g->output, g->bias, g->a, g->b, v_);
  }
  if (const auto* c = std::get_if<QConv2dOp>(&op)) {
    if (const Availability a = check_activation(c->input); !a.available) return a;
    if (const Availability w = check_weights(c->weight, 0); !w.available) return w;
    return check_output(c->output, c->bias, c->input, c->weight, v_);
  }
  return {false, "the hip kernels implement quantize, dequantize, requantize, qgemm and qconv2d (not " +
                     std::string(op_name(op)) + ")"};
}

Tensor HipBackend::run(const OpRequest& op) {
  // The first call in this process initialises the runtime (see "The device" above).
  if (const Availability& a = device_here().availability; !a.available)
    throw std::runtime_error("hip backend: " + a.reason);
  DeviceExec ex;
  return gpu::plan::run(ex, op, hip_recipe(v_));
}

}  // namespace qc
