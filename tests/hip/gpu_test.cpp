// The hip backend on a GPU: every request of tests/hip/cases.hpp (GEMMs of odd shapes, K = 1, large
// K, int32 wrap-around, convolutions, the elementwise ops) on every variant that supports it, bit
// for bit against the oracle under the variant's claim and against the CPU executor; both GEMM
// main loops forced in turn; int4 packing round trips on the device. Without a usable GPU every test
// is skipped with the runtime's reason (ctest shows them as skipped, not passed).
#include "backends/hip/backend.hpp"
#include "backends/hip/hip_compat.hpp"
#include "backends/hip/kernels.hpp"
#include "backends/hip/plan.hpp"
#include "tests/hip/cases.hpp"
#include "tests/hip/host_exec.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace qc::gpu {
namespace {

using test::NamedOp;

class HipGpu : public ::testing::TestWithParam<NamedOp> {
 protected:
  void SetUp() override {
    const Availability a = hip_device_availability();
    if (!a.available) GTEST_SKIP() << "no usable GPU: " << a.reason;
  }
};

// Runs `op` on the GPU for every variant that supports it, with the GEMM path `path` ("dp4a",
// "mma" or "" for the backend's own choice).
void check_on_gpu(const NamedOp& c, const char* path) {
  if (*path != '\0')
    setenv("QCONFORM_HIP_GEMM", path, 1);
  else
    unsetenv("QCONFORM_HIP_GEMM");
  int ran = 0;
  for (HipVariant v : all_hip_variants()) {
    HipBackend backend(v);
    if (!backend.supports(c.op).available) continue;
    const Tensor out = backend.run(c.op);
    const test::Mismatches m = test::compare_to_claim(c.op, out, hip_variant_claim(v));
    EXPECT_EQ(m.count, 0) << c.name << " on " << hip_variant_name(v) << " (" << path << "):" << m.first;
    // The CPU executor runs the same plan; the GPU must give the very same bits.
    test::HostExec ex(std::string(path) == "mma" ? GemmPath::mma : GemmPath::dp4a);
    const Tensor host = plan::run(ex, c.op, hip_recipe(v));
    std::int64_t differ = 0;
    for (std::int64_t i = 0; i < out.size(); ++i) differ += out.bits(i) != host.bits(i);
    EXPECT_EQ(differ, 0) << c.name << " on " << hip_variant_name(v) << ": GPU and CPU executor differ";
    ++ran;
  }
  unsetenv("QCONFORM_HIP_GEMM");
  EXPECT_GT(ran, 0) << c.name;
}

using HipGpuGemm = HipGpu;
TEST_P(HipGpuGemm, Dp4a) { check_on_gpu(GetParam(), "dp4a"); }
TEST_P(HipGpuGemm, TensorCores) { check_on_gpu(GetParam(), "mma"); }
INSTANTIATE_TEST_SUITE_P(OddShapes, HipGpuGemm, ::testing::ValuesIn(test::gemm_cases()),
                         [](const auto& info) { return info.param.name; });

using HipGpuConv = HipGpu;
TEST_P(HipGpuConv, ImplicitGemm) { check_on_gpu(GetParam(), ""); }
INSTANTIATE_TEST_SUITE_P(Geometries, HipGpuConv, ::testing::ValuesIn(test::conv_cases()),
                         [](const auto& info) { return info.param.name; });

using HipGpuElementwise = HipGpu;
TEST_P(HipGpuElementwise, Kernels) { check_on_gpu(GetParam(), ""); }
INSTANTIATE_TEST_SUITE_P(Ops, HipGpuElementwise, ::testing::ValuesIn(test::elementwise_cases()),
                         [](const auto& info) { return info.param.name; });

using HipGpuWrap = HipGpu;
TEST_P(HipGpuWrap, Int32Accumulator) { check_on_gpu(GetParam(), "dp4a"); }
INSTANTIATE_TEST_SUITE_P(Accumulator, HipGpuWrap, ::testing::Values(test::int32_wrap_case()),
                         [](const auto& info) { return info.param.name; });

// pack_int4 then unpack_int4 on the device gives back the values, and the bytes equal the
// oracle's pack_int4 (flat ONNX order and MIGraphX's per-axis pairs, odd lengths padded).
using HipGpuInt4 = HipGpu;
TEST_P(HipGpuInt4, PackAndUnpack) {
  test::Rng r(9);
  for (const Int4Packing& packing : {onnx_int4_packing(), migraphx_int4_packing(0)}) {
    // Axis 0 has even length: MIGraphX's packing rejects an odd one.
    const Shape shape{6, 5};
    const Tensor v = test::random_ints(DType::i4, shape, r, -8, 7);
    const Tensor want = pack_int4(v, DType::i4, packing);
    const std::int64_t length = packing.axis ? 6 : 30, inner = packing.axis ? 5 : 1;
    std::int32_t *values = nullptr, *back = nullptr;
    std::uint8_t* packed = nullptr;
    ASSERT_EQ(hipMalloc(&values, 30 * sizeof(std::int32_t)), hipSuccess);
    ASSERT_EQ(hipMalloc(&back, 30 * sizeof(std::int32_t)), hipSuccess);
    ASSERT_EQ(hipMalloc(&packed, static_cast<std::size_t>(want.size())), hipSuccess);
    const std::vector<std::int32_t> host = plan::ints(v);
    ASSERT_EQ(hipMemcpy(values, host.data(), 30 * sizeof(std::int32_t), hipMemcpyHostToDevice), hipSuccess);
    ASSERT_EQ(launch_pack_int4(values, 30, length, inner, true, packed, nullptr), hipSuccess);
    ASSERT_EQ(launch_unpack_int4(packed, 30, length, inner, true, true, back, nullptr), hipSuccess);
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(want.size()));
    std::vector<std::int32_t> round_trip(30);
    ASSERT_EQ(hipMemcpy(bytes.data(), packed, bytes.size(), hipMemcpyDeviceToHost), hipSuccess);
    ASSERT_EQ(hipMemcpy(round_trip.data(), back, 30 * sizeof(std::int32_t), hipMemcpyDeviceToHost), hipSuccess);
    for (std::int64_t b = 0; b < want.size(); ++b) EXPECT_EQ(bytes[static_cast<std::size_t>(b)], want.bits(b)) << b;
    EXPECT_EQ(round_trip, host);
    (void)hipFree(values);
    (void)hipFree(back);
    (void)hipFree(packed);
  }
}
INSTANTIATE_TEST_SUITE_P(Device, HipGpuInt4, ::testing::Values(NamedOp{"int4", QuantizeOp{}}),
                         [](const auto& info) { return info.param.name; });

// The facts a report shows for the device.
using HipGpuFacts = HipGpu;
TEST_P(HipGpuFacts, NameTheDevice) {
  for (HipVariant v : all_hip_variants()) {
    auto f = HipBackend(v).facts();
    for (const char* key : {"gpu", "compute_capability", "driver_version", "runtime_version", "device_compile_flags",
                            "contraction", "fast_math"})
      EXPECT_FALSE(f[key].empty()) << key;
  }
}
INSTANTIATE_TEST_SUITE_P(Device, HipGpuFacts, ::testing::Values(NamedOp{"facts", QuantizeOp{}}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace qc::gpu
