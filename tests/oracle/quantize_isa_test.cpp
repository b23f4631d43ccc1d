// Every build of the f32 quantize kernel this machine can run (oracles/quantize_f32.hpp) against the
// generic build, element for element: values, labels and the elements flagged for the slow path,
// under every rounding mode, order, clamp and output format the kernel takes. quantize() uses the
// fastest build, which the fast-vs-slow property test checks against the exact slow path; this test
// carries that check to the others (on an AVX-512 host, the AVX2 build an AVX2-only host runs).
#include "cases/generators.hpp"
#include "oracles/quantize_f32.hpp"
#include "qconform/error.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace qc {
namespace {

using quantize_f32::Out;
using quantize_f32::Params;

// Inputs that exercise every branch: random bit patterns (NaN, inf, subnormals, huge), ties and
// near ties of the scale, saturation edges, and exact zeros of both signs.
std::vector<float> inputs(SplitMix64& rng, float s, std::int64_t n) {
  std::vector<float> x(static_cast<std::size_t>(n));
  for (float& v : x) {
    switch (rng.below(5)) {
      case 0:
        v = std::bit_cast<float>(static_cast<std::uint32_t>(rng.next()));
        break;
      case 1: {
        const float tie = (static_cast<float>(static_cast<std::int64_t>(rng.below(1200)) - 600) + 0.5f) * s;
        v = tie;
        for (int k = static_cast<int>(rng.below(5)) - 2; k != 0; k += k > 0 ? -1 : 1)
          v = std::nextafter(v, k > 0 ? INFINITY : -INFINITY);
        break;
      }
      case 2:
        v = static_cast<float>((rng.uniform01() * 2 - 1) * 70000.0 * s);
        break;
      case 3:
        v = static_cast<float>((rng.uniform01() * 2 - 1) * 4.0);
        break;
      default:
        v = rng.below(2) ? 0.0f : -0.0f;
        break;
    }
  }
  return x;
}

std::vector<std::uint8_t> run(quantize_f32::Kernel k, const Params& p, Out out, const std::vector<float>& x,
                              std::vector<Label>* labels, std::vector<std::int64_t>& slow) {
  const int width = out == Out::s8 || out == Out::u8 ? 1 : 2;
  std::vector<std::uint8_t> q(x.size() * static_cast<std::size_t>(width));
  if (labels) labels->assign(x.size(), Label::special);
  k(p, out, x.data(), static_cast<std::int64_t>(x.size()), q.data(), labels ? labels->data() : nullptr, 0, slow);
  return q;
}

TEST(QuantizeIsa, EveryBuildMatchesTheGenericOne) {
  const auto variants = quantize_f32::variants();
  ASSERT_GE(variants.size(), 1u);
  EXPECT_STREQ(variants.front().isa, "generic");
  if (variants.size() == 1) GTEST_SKIP() << "this machine runs only the generic build (no AVX2)";
  SplitMix64 rng(20261125);
  const RoundingMode modes[] = {RoundingMode::rne, RoundingMode::rna,   RoundingMode::rhu, RoundingMode::rhd,
                                RoundingMode::rtz, RoundingMode::floor, RoundingMode::ceil};
  const QuantizeOrder orders[] = {QuantizeOrder::div_then_add_int, QuantizeOrder::div_add_float,
                                  QuantizeOrder::recip_then_add_int, QuantizeOrder::recip_add_float};
  const struct {
    Out out;
    std::int32_t lo, hi;
  } outs[] = {{Out::s8, -128, 127}, {Out::u8, 0, 255}, {Out::s16, -32768, 32767}, {Out::u16, 0, 65535}};
  int configs = 0;
  for (RoundingMode m : modes)
    for (QuantizeOrder o : orders)
      for (const auto& oc : outs)
        for (bool float_before : {false, true}) {
          Params p;
          p.s = static_cast<float>(std::ldexp(1.0 + rng.uniform01(), static_cast<int>(rng.below(12)) - 9));
          p.zp = static_cast<std::int32_t>(
              oc.lo + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(oc.hi - oc.lo) + 1)));
          const bool int_add = o == QuantizeOrder::div_then_add_int || o == QuantizeOrder::recip_then_add_int;
          const std::int32_t off = int_add ? p.zp : 0;
          p.float_before = float_before;
          p.lo_f = float_before ? static_cast<float>(oc.lo - off) : -0x1p30f;
          p.hi_f = float_before ? static_cast<float>(oc.hi - off) : 0x1p30f;
          p.lo = oc.lo;
          p.hi = oc.hi;
          p.min_normal = 0x1p-126f;
          p.mode = m;
          p.order = o;
          // An odd length, so every build's vector remainder loop runs too.
          const std::vector<float> x = inputs(rng, p.s, 5003);
          for (bool with_labels : {false, true}) {
            std::vector<Label> want_labels, got_labels;
            std::vector<std::int64_t> want_slow, got_slow;
            const auto want =
                run(variants.front().kernel, p, oc.out, x, with_labels ? &want_labels : nullptr, want_slow);
            for (std::size_t v = 1; v < variants.size(); ++v) {
              got_slow.clear();
              const auto got = run(variants[v].kernel, p, oc.out, x, with_labels ? &got_labels : nullptr, got_slow);
              const std::string where = std::string(variants[v].isa) + ", mode " + std::string(name(m)) + ", order " +
                                        std::string(name(o)) + (float_before ? ", float_before" : "");
              ASSERT_EQ(got_slow, want_slow) << where;
              const int width = static_cast<int>(want.size() / x.size());
              for (std::size_t i = 0; i < x.size(); ++i) {
                if (std::binary_search(want_slow.begin(), want_slow.end(), static_cast<std::int64_t>(i))) continue;
                ASSERT_EQ(std::memcmp(&got[i * width], &want[i * width], static_cast<std::size_t>(width)), 0)
                    << where << ", element " << i << " (x = " << x[i] << ")";
                if (with_labels) {
                  ASSERT_EQ(got_labels[i], want_labels[i]) << where << ", element " << i;
                }
              }
            }
          }
          ++configs;
        }
  EXPECT_EQ(configs, 7 * 4 * 4 * 2);
}

TEST(QuantizeIsa, ABuildIsPickedByName) {
  try {
    quantize_f32::kernel_named("sse9");
    ADD_FAILURE() << "an unknown ISA name was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("QCONFORM_ORACLE_ISA=sse9: this machine runs generic"), std::string::npos)
        << e.what();
  }
  const auto variants = quantize_f32::variants();
  EXPECT_EQ(quantize_f32::kernel_named("generic"), variants.front().kernel);
  EXPECT_EQ(quantize_f32::kernel_named(""), variants.back().kernel);
  EXPECT_EQ(quantize_f32::kernel_named(nullptr), variants.back().kernel);
}

}  // namespace
}  // namespace qc
