// A fluent GEMM tester in the manner of XNNPACK's microkernel testers: problem sizes and
// quantization first, then .test(isa), which builds operands, runs the kernel, computes the
// reference (reference.hpp) and reports the first mismatching element with every parameter needed
// to re-run exactly that case.
#pragma once

#include "reference.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <optional>

namespace qc::vnni::test {

class GemmTester {
 public:
  GemmTester& m(std::int64_t v) {
    m_ = v;
    return *this;
  }
  GemmTester& n(std::int64_t v) {
    n_ = v;
    return *this;
  }
  GemmTester& k(std::int64_t v) {
    k_ = v;
    return *this;
  }
  GemmTester& lda_pad(std::int64_t v) {
    lda_pad_ = v;
    return *this;
  }
  GemmTester& ldo_pad(std::int64_t v) {
    ldo_pad_ = v;
    return *this;
  }
  GemmTester& activations(ActivationType t, std::int32_t zp = 0) {
    q_.a_type = t;
    q_.a_zero_point = zp;
    return *this;
  }
  GemmTester& weights(WeightType t) {
    q_.w_type = t;
    return *this;
  }
  GemmTester& layout(WeightLayout l) {
    layout_ = l;
    return *this;
  }
  GemmTester& packed_int4(bool v = true) {
    packed_int4_ = v;
    return *this;
  }
  GemmTester& weight_zero_points(std::vector<std::int32_t> v) {
    q_.w_zero_points = std::move(v);
    return *this;
  }
  GemmTester& per_channel_scales(bool v = true) {
    per_channel_ = v;
    return *this;
  }
  GemmTester& bias(bool v = true) {
    bias_ = v;
    return *this;
  }
  GemmTester& bias_f32(bool v = true) {
    bias_f32_ = v;
    return *this;
  }
  GemmTester& weights_7bit(bool v = true) {
    q_.weights_7bit = v;
    return *this;
  }
  GemmTester& output(OutputKind k, float scale = 1.0f, std::int32_t zp = 0) {
    q_.output.kind = k;
    q_.output.scale = scale;
    q_.output.zero_point = zp;
    return *this;
  }
  GemmTester& clamp(std::int32_t lo, std::int32_t hi) {
    q_.output.min = lo;
    q_.output.max = hi;
    return *this;
  }
  GemmTester& scales(float a, float w) {
    q_.a_scale = a;
    w_scale_ = w;
    return *this;
  }
  GemmTester& seed(std::uint32_t v) {
    seed_ = v;
    return *this;
  }
  // Fixed operand values instead of random ones: a(m, k), w(k, n).
  GemmTester& a_values(std::function<std::int32_t(std::int64_t, std::int64_t)> f) {
    a_fn_ = std::move(f);
    return *this;
  }
  GemmTester& w_values(std::function<std::int32_t(std::int64_t, std::int64_t)> f) {
    w_fn_ = std::move(f);
    return *this;
  }
  // Also require the model to equal the exact int64 value (a case whose bound proves int32 exact).
  GemmTester& expect_exact(bool v = true) {
    expect_exact_ = v;
    return *this;
  }

  std::string describe(Isa isa) const {
    std::ostringstream s;
    s << "isa=" << name(isa) << " M=" << m_ << " N=" << n_ << " K=" << k_ << " a=" << name(q_.a_type)
      << " za=" << q_.a_zero_point << " w=" << name(q_.w_type) << (packed_int4_ ? "(packed)" : "")
      << " layout=" << (layout_ == WeightLayout::k_by_n ? "k_by_n" : "n_by_k") << " zw=" << q_.w_zero_points.size()
      << " per_channel=" << per_channel_ << " bias=" << bias_ << " bias_f32=" << bias_f32_ << " w7=" << q_.weights_7bit
      << " out=" << name(q_.output.kind) << " s_out=" << q_.output.scale << " zo=" << q_.output.zero_point
      << " lda_pad=" << lda_pad_ << " ldo_pad=" << ldo_pad_ << " seed=" << seed_;
    return s.str();
  }

  void test(Isa isa) const {
    SCOPED_TRACE(describe(isa));
    std::mt19937 rng(seed_);
    const auto ar = q_.a_type == ActivationType::u8 ? std::pair{0, 255} : std::pair{-128, 127};
    std::pair<int, int> wr = q_.w_type == WeightType::s8   ? std::pair{-128, 127}
                             : q_.w_type == WeightType::s4 ? std::pair{-8, 7}
                                                           : std::pair{0, 15};
    if (q_.weights_7bit && q_.w_type == WeightType::s8) wr = {-64, 63};
    auto uniform = [&](std::pair<int, int> r) { return std::uniform_int_distribution<int>(r.first, r.second)(rng); };

    const std::int64_t lda = k_ + lda_pad_, ldo = n_ + ldo_pad_;
    std::vector<std::int32_t> a(static_cast<std::size_t>(m_ * k_)), w(static_cast<std::size_t>(k_ * n_));
    for (std::int64_t i = 0; i < m_; ++i)
      for (std::int64_t kk = 0; kk < k_; ++kk)
        a[static_cast<std::size_t>(i * k_ + kk)] = a_fn_ ? a_fn_(i, kk) : uniform(ar);
    for (std::int64_t kk = 0; kk < k_; ++kk)
      for (std::int64_t j = 0; j < n_; ++j)
        w[static_cast<std::size_t>(kk * n_ + j)] = w_fn_ ? w_fn_(kk, j) : uniform(wr);

    QuantSpec q = q_;
    q.w_scales = {w_scale_};
    if (per_channel_) {
      q.w_scales.clear();
      for (std::int64_t j = 0; j < n_; ++j)
        q.w_scales.push_back(w_scale_ * (0.5f + 0.125f * static_cast<float>(j % 7)));
    }
    if (bias_)
      for (std::int64_t j = 0; j < n_; ++j)
        q.bias.push_back(std::uniform_int_distribution<std::int32_t>(-50000, 50000)(rng));
    if (bias_f32_)
      for (std::int64_t j = 0; j < n_; ++j) q.bias_f32.push_back(static_cast<float>(uniform({-1000, 1000})) * 0.01f);

    GemmParams p;
    p.n = n_;
    p.k = k_;
    p.w_layout = layout_;
    p.quant = q;
    std::vector<std::int8_t> w_given(static_cast<std::size_t>(k_ * n_));
    for (std::int64_t kk = 0; kk < k_; ++kk)
      for (std::int64_t j = 0; j < n_; ++j)
        w_given[static_cast<std::size_t>(layout_ == WeightLayout::k_by_n ? kk * n_ + j : j * k_ + kk)] =
            static_cast<std::int8_t>(w[static_cast<std::size_t>(kk * n_ + j)]);
    PackedWeights packed;
    if (packed_int4_) {
      std::vector<std::uint8_t> bytes(static_cast<std::size_t>((k_ * n_ + 1) / 2), 0);
      for (std::size_t i = 0; i < w_given.size(); ++i)
        bytes[i / 2] = static_cast<std::uint8_t>(bytes[i / 2] | ((w_given[i] & 0x0F) << (i % 2 ? 4 : 0)));
      packed = pack_weights_int4(p, bytes, isa);
    } else {
      packed = pack_weights(p, w_given, isa);
    }

    OutputBuffer out(q.output.kind, static_cast<std::size_t>(std::max<std::int64_t>(m_, 1) * ldo));
    run(packed, a, lda, out, ldo);

    std::vector<std::int32_t> arow(static_cast<std::size_t>(k_)), wcol(static_cast<std::size_t>(k_));
    for (std::int64_t j = 0; j < n_; ++j) {
      const std::int64_t zw = q.w_zero_points.empty()       ? 0
                              : q.w_zero_points.size() == 1 ? q.w_zero_points[0]
                                                            : q.w_zero_points[static_cast<std::size_t>(j)];
      const std::int64_t b = q.bias.empty() ? 0 : q.bias[static_cast<std::size_t>(j)];
      const Epilogue e = epilogue_for(q, j);
      for (std::int64_t kk = 0; kk < k_; ++kk)
        wcol[static_cast<std::size_t>(kk)] = w[static_cast<std::size_t>(kk * n_ + j)];
      for (std::int64_t i = 0; i < m_; ++i) {
        for (std::int64_t kk = 0; kk < k_; ++kk)
          arow[static_cast<std::size_t>(kk)] = a[static_cast<std::size_t>(i * k_ + kk)];
        const DotModel d = dot_model(arow, wcol, q.a_type, q.a_zero_point, zw, b);
        if (expect_exact_) {
          ASSERT_EQ(d.value(isa), d.exact) << "model is not exact at m=" << i << " n=" << j;
        }
        const double want = e.apply(d.value(isa));
        const double got = out.at(static_cast<std::size_t>(i * ldo + j));
        ASSERT_TRUE(same(want, got)) << "element m=" << i << " n=" << j << ": got " << got << ", want " << want
                                     << " (model accumulator " << d.value(isa) << ", exact " << d.exact << ")";
      }
    }
    const double sentinel = OutputBuffer(q.output.kind, 1).at(0);
    for (std::int64_t i = 0; i < m_; ++i)  // the row padding past N is untouched
      for (std::int64_t j = n_; j < ldo; ++j)
        ASSERT_TRUE(same(out.at(static_cast<std::size_t>(i * ldo + j)), sentinel))
            << "wrote past N at m=" << i << " n=" << j;
  }

 private:
  template <class A>
  static void run_typed(const PackedWeights& w, const std::vector<A>& a, std::int64_t m, std::int64_t lda,
                        OutputBuffer& out, std::int64_t ldo) {
    switch (out.kind) {
      case OutputKind::int32:
        gemm(w, m, a.data(), lda, out.i32.data(), ldo);
        break;
      case OutputKind::f32:
        gemm(w, m, a.data(), lda, out.f32.data(), ldo);
        break;
      case OutputKind::u8:
        gemm(w, m, a.data(), lda, out.u8.data(), ldo);
        break;
      case OutputKind::s8:
        gemm(w, m, a.data(), lda, out.s8.data(), ldo);
        break;
    }
  }
  void run(const PackedWeights& w, const std::vector<std::int32_t>& a, std::int64_t lda, OutputBuffer& out,
           std::int64_t ldo) const {
    // A with row stride lda; the padding bytes hold a value that would show if read.
    if (q_.a_type == ActivationType::u8) {
      std::vector<std::uint8_t> buf(static_cast<std::size_t>(std::max<std::int64_t>(m_, 1) * lda), 0xEE);
      for (std::int64_t i = 0; i < m_; ++i)
        for (std::int64_t kk = 0; kk < k_; ++kk)
          buf[static_cast<std::size_t>(i * lda + kk)] =
              static_cast<std::uint8_t>(a[static_cast<std::size_t>(i * k_ + kk)]);
      run_typed(w, buf, m_, lda, out, ldo);
    } else {
      std::vector<std::int8_t> buf(static_cast<std::size_t>(std::max<std::int64_t>(m_, 1) * lda), 0x5A);
      for (std::int64_t i = 0; i < m_; ++i)
        for (std::int64_t kk = 0; kk < k_; ++kk)
          buf[static_cast<std::size_t>(i * lda + kk)] =
              static_cast<std::int8_t>(a[static_cast<std::size_t>(i * k_ + kk)]);
      run_typed(w, buf, m_, lda, out, ldo);
    }
  }

  std::int64_t m_ = 1, n_ = 1, k_ = 1, lda_pad_ = 0, ldo_pad_ = 0;
  QuantSpec q_;
  WeightLayout layout_ = WeightLayout::k_by_n;
  bool packed_int4_ = false, per_channel_ = false, bias_ = false, bias_f32_ = false, expect_exact_ = false;
  float w_scale_ = 1.0f;
  std::uint32_t seed_ = 1;
  std::function<std::int32_t(std::int64_t, std::int64_t)> a_fn_, w_fn_;
};

}  // namespace qc::vnni::test
