// NHWC conv2d against a direct convolution written in the test: every output gathers its taps in
// the stated K order (padded taps = the activation zero point) and goes through the same int64
// model and epilogue as the GEMM tests.
#include "isa_name.hpp"
#include "qconform/parallel.hpp"
#include "reference.hpp"

#include <gtest/gtest.h>

namespace qc::vnni {
namespace {

using test::dot_model;
using test::OutputBuffer;

struct ConvCase {
  std::int64_t batch = 1, h = 5, w = 5, c = 3, oc = 4, kh = 3, kw = 3;
  std::int64_t sh = 1, sw = 1, pt = 1, pl = 1, pb = 1, pr = 1, dh = 1, dw = 1, groups = 1;
};

std::string describe(const ConvCase& c) {
  std::ostringstream s;
  s << "N=" << c.batch << " H=" << c.h << " W=" << c.w << " C=" << c.c << " OC=" << c.oc << " K=" << c.kh << "x" << c.kw
    << " stride=" << c.sh << "," << c.sw << " pad=" << c.pt << "," << c.pl << "," << c.pb << "," << c.pr
    << " dilation=" << c.dh << "," << c.dw << " groups=" << c.groups;
  return s.str();
}

class ConvTester {
 public:
  ConvTester& shape(const ConvCase& c) {
    c_ = c;
    return *this;
  }
  ConvTester& activations(ActivationType t, std::int32_t zp) {
    q_.a_type = t;
    q_.a_zero_point = zp;
    return *this;
  }
  ConvTester& order(ConvKOrder o) {
    order_ = o;
    return *this;
  }
  ConvTester& strategy(ConvStrategy s) {
    strategy_ = s;
    return *this;
  }
  ConvTester& output(OutputKind k, float scale = 1.0f, std::int32_t zp = 0) {
    q_.output.kind = k;
    q_.output.scale = scale;
    q_.output.zero_point = zp;
    return *this;
  }
  ConvTester& per_channel(bool v = true) {
    per_channel_ = v;
    return *this;
  }
  ConvTester& bias(bool v = true) {
    bias_ = v;
    return *this;
  }
  ConvTester& weights(WeightType t, bool packed = false) {
    q_.w_type = t;
    packed_int4_ = packed;
    return *this;
  }
  ConvTester& weight_zero_point(std::int32_t zw) {
    q_.w_zero_points = {zw};
    return *this;
  }
  ConvTester& seed(std::uint32_t s) {
    seed_ = s;
    return *this;
  }

  void test(Isa isa) const {
    SCOPED_TRACE(describe(c_) + " isa=" + std::string(name(isa)) + " order=" + std::string(name(order_)) +
                 " strategy=" + std::string(name(strategy_)) + " a=" + std::string(name(q_.a_type)) +
                 " za=" + std::to_string(q_.a_zero_point) + " out=" + std::string(name(q_.output.kind)) +
                 " seed=" + std::to_string(seed_));
    std::mt19937 rng(seed_);
    const auto ar = q_.a_type == ActivationType::u8 ? std::pair{0, 255} : std::pair{-128, 127};
    const auto wr = q_.w_type == WeightType::s8   ? std::pair{-128, 127}
                    : q_.w_type == WeightType::s4 ? std::pair{-8, 7}
                                                  : std::pair{0, 15};
    auto uniform = [&](std::pair<int, int> r) { return std::uniform_int_distribution<int>(r.first, r.second)(rng); };
    const std::int64_t cg = c_.c / c_.groups, ocg = c_.oc / c_.groups;
    std::vector<std::int32_t> x(static_cast<std::size_t>(c_.batch * c_.h * c_.w * c_.c));
    std::vector<std::int32_t> wt(static_cast<std::size_t>(c_.oc * cg * c_.kh * c_.kw));  // OIHW
    for (auto& v : x) v = uniform(ar);
    for (auto& v : wt) v = uniform(wr);

    Conv2dParams p;
    p.batch = c_.batch;
    p.height = c_.h;
    p.width = c_.w;
    p.channels = c_.c;
    p.out_channels = c_.oc;
    p.kernel_h = c_.kh;
    p.kernel_w = c_.kw;
    p.stride_h = c_.sh;
    p.stride_w = c_.sw;
    p.pad_top = c_.pt;
    p.pad_left = c_.pl;
    p.pad_bottom = c_.pb;
    p.pad_right = c_.pr;
    p.dilation_h = c_.dh;
    p.dilation_w = c_.dw;
    p.groups = c_.groups;
    p.k_order = order_;
    p.strategy = strategy_;
    p.quant = q_;
    p.quant.a_scale = 0.05f;
    p.quant.w_scales = {0.01f};
    if (per_channel_) {
      p.quant.w_scales.clear();
      for (std::int64_t o = 0; o < c_.oc; ++o) p.quant.w_scales.push_back(0.01f * static_cast<float>(1 + o % 5));
    }
    if (bias_)
      for (std::int64_t o = 0; o < c_.oc; ++o) p.quant.bias.push_back(uniform({-3000, 3000}));

    const std::vector<std::int8_t> w8(wt.begin(), wt.end());
    PackedConv2d packed;
    if (packed_int4_) {
      std::vector<std::uint8_t> bytes((w8.size() + 1) / 2, 0);
      for (std::size_t i = 0; i < w8.size(); ++i)
        bytes[i / 2] = static_cast<std::uint8_t>(bytes[i / 2] | ((w8[i] & 0x0F) << (i % 2 ? 4 : 0)));
      packed = pack_conv2d_int4(p, bytes, isa);
    } else {
      packed = pack_conv2d(p, w8, isa);
    }
    const std::int64_t oh_n = (c_.h + c_.pt + c_.pb - c_.dh * (c_.kh - 1) - 1) / c_.sh + 1;
    const std::int64_t ow_n = (c_.w + c_.pl + c_.pr - c_.dw * (c_.kw - 1) - 1) / c_.sw + 1;
    ASSERT_EQ(packed.out_h, oh_n);
    ASSERT_EQ(packed.out_w, ow_n);

    OutputBuffer out(p.quant.output.kind, static_cast<std::size_t>(c_.batch * oh_n * ow_n * c_.oc));
    if (q_.a_type == ActivationType::u8) {
      const std::vector<std::uint8_t> xa(x.begin(), x.end());
      run(packed, xa.data(), out);
    } else {
      const std::vector<std::int8_t> xa(x.begin(), x.end());
      run(packed, xa.data(), out);
    }

    std::vector<std::int32_t> av, wv;
    for (std::int64_t b = 0; b < c_.batch; ++b)
      for (std::int64_t oh = 0; oh < oh_n; ++oh)
        for (std::int64_t ow = 0; ow < ow_n; ++ow)
          for (std::int64_t o = 0; o < c_.oc; ++o) {
            const std::int64_t g = o / ocg;
            av.clear();
            wv.clear();
            auto tap = [&](std::int64_t ky, std::int64_t kx, std::int64_t ch) {
              const std::int64_t ih = oh * c_.sh - c_.pt + ky * c_.dh, iw = ow * c_.sw - c_.pl + kx * c_.dw;
              const bool inside = ih >= 0 && ih < c_.h && iw >= 0 && iw < c_.w;
              av.push_back(inside ? x[static_cast<std::size_t>(((b * c_.h + ih) * c_.w + iw) * c_.c + g * cg + ch)]
                                  : q_.a_zero_point);
              wv.push_back(wt[static_cast<std::size_t>(((o * cg + ch) * c_.kh + ky) * c_.kw + kx)]);
            };
            if (order_ == ConvKOrder::hwc) {
              for (std::int64_t ky = 0; ky < c_.kh; ++ky)
                for (std::int64_t kx = 0; kx < c_.kw; ++kx)
                  for (std::int64_t ch = 0; ch < cg; ++ch) tap(ky, kx, ch);
            } else {
              for (std::int64_t ch = 0; ch < cg; ++ch)
                for (std::int64_t ky = 0; ky < c_.kh; ++ky)
                  for (std::int64_t kx = 0; kx < c_.kw; ++kx) tap(ky, kx, ch);
            }
            const std::int64_t zw = q_.w_zero_points.empty() ? 0 : q_.w_zero_points[0];
            const std::int64_t bias = p.quant.bias.empty() ? 0 : p.quant.bias[static_cast<std::size_t>(o)];
            const auto d = dot_model(av, wv, q_.a_type, q_.a_zero_point, zw, bias);
            const double want = test::epilogue_for(p.quant, o).apply(d.value(isa));
            const std::size_t e = static_cast<std::size_t>(((b * oh_n + oh) * ow_n + ow) * c_.oc + o);
            ASSERT_TRUE(test::same(out.at(e), want))
                << "output b=" << b << " oh=" << oh << " ow=" << ow << " oc=" << o << ": got " << out.at(e) << ", want "
                << want << " (model accumulator " << d.value(isa) << ", exact " << d.exact << ")";
          }
  }

 private:
  template <class A>
  static void run(const PackedConv2d& w, const A* x, OutputBuffer& out) {
    switch (out.kind) {
      case OutputKind::int32:
        conv2d(w, x, out.i32.data());
        break;
      case OutputKind::f32:
        conv2d(w, x, out.f32.data());
        break;
      case OutputKind::u8:
        conv2d(w, x, out.u8.data());
        break;
      case OutputKind::s8:
        conv2d(w, x, out.s8.data());
        break;
    }
  }

  ConvCase c_;
  QuantSpec q_;
  ConvKOrder order_ = ConvKOrder::hwc;
  ConvStrategy strategy_ = ConvStrategy::implicit_gemm;
  bool per_channel_ = false, bias_ = false, packed_int4_ = false;
  std::uint32_t seed_ = 7;
};

class VnniConv : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (const auto missing = missing_feature(GetParam()))
      GTEST_SKIP() << name(GetParam()) << ": this CPU lacks " << *missing;
  }
  Isa isa() const { return GetParam(); }
};

using test::isa_name;

INSTANTIATE_TEST_SUITE_P(AllIsas, VnniConv, ::testing::ValuesIn(kAllIsas), isa_name);

std::vector<ConvCase> geometries() {
  std::vector<ConvCase> v;
  v.push_back({});                                                     // 3x3 same padding
  v.push_back({2, 7, 6, 5, 9, 3, 2, 2, 1, 1, 0, 2, 1, 1, 1, 1});       // stride 2, asymmetric padding, batch 2
  v.push_back({1, 9, 9, 4, 6, 3, 3, 1, 2, 2, 2, 2, 2, 2, 2, 1});       // dilation 2
  v.push_back({1, 6, 5, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2});       // groups 2
  v.push_back({1, 6, 6, 8, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 8});      // depthwise, multiplier 2
  v.push_back({2, 4, 5, 19, 50, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1});     // pointwise (read in place)
  v.push_back({1, 5, 5, 6, 4, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 2});       // pointwise, groups 2
  v.push_back({1, 3, 4, 16, 8, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 2});      // pointwise, u8 Cg = 8: read in place
  v.push_back({1, 5, 7, 3, 5, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1});       // 1x1 stride 2
  v.push_back({1, 3, 3, 2, 3, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 1});       // kernel larger than the image
  v.push_back({1, 12, 12, 130, 33, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1});  // K = 1170: K blocks cut taps, M > 64
  return v;
}

TEST_P(VnniConv, Geometries) {
  std::uint32_t seed = 1;
  for (const ConvCase& c : geometries())
    for (ConvKOrder order : {ConvKOrder::hwc, ConvKOrder::chw})
      for (ConvStrategy strategy : {ConvStrategy::implicit_gemm, ConvStrategy::im2col}) {
        ConvTester()
            .shape(c)
            .order(order)
            .strategy(strategy)
            .activations(ActivationType::u8, 100)
            .seed(++seed)
            .test(isa());
        if (HasFatalFailure()) return;
      }
}

TEST_P(VnniConv, QuantizationAndOutputs) {
  const ConvCase c{2, 6, 7, 5, 12, 3, 3, 2, 1, 1, 1, 0, 1, 1, 1, 1};
  std::uint32_t seed = 50;
  for (ActivationType at : {ActivationType::u8, ActivationType::s8})
    for (OutputKind kind : {OutputKind::int32, OutputKind::f32, OutputKind::u8, OutputKind::s8}) {
      const std::int32_t za = at == ActivationType::u8 ? 3 : -7;
      ConvTester()
          .shape(c)
          .activations(at, za)
          .per_channel()
          .bias()
          .output(kind, 0.3f, kind == OutputKind::u8 ? 128 : 0)
          .seed(++seed)
          .test(isa());
      if (HasFatalFailure()) return;
    }
}

TEST_P(VnniConv, Int4AndWeightZeroPoint) {
  ConvTester().shape({}).weights(WeightType::s4, true).activations(ActivationType::s8, 1).test(isa());
  ConvTester()
      .shape({1, 5, 5, 4, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2})
      .weights(WeightType::u4, false)
      .weight_zero_point(8)
      .activations(ActivationType::u8, 128)
      .output(OutputKind::f32)
      .test(isa());
}

// A convolution big enough that its row groups run on several threads at once (the GEMM driver
// gives each thread 2^22 multiply-adds or more): every output against the model. The image-row
// packer once kept the next pixel in the shared image description, so two threads asking for rows
// moved each other's pixel and outputs went to the wrong place.
TEST_P(VnniConv, RowGroupsOnSeveralThreadsReadTheirOwnPixels) {
  const int before = worker_threads();
  set_worker_threads(4);
  ConvTester()
      .shape({2, 32, 32, 16, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1})
      .order(ConvKOrder::chw)
      .strategy(ConvStrategy::implicit_gemm)
      .activations(ActivationType::u8, 77)
      .seed(310)
      .test(isa());
  set_worker_threads(before);
}

// The K order fixes the pairs vpmaddubsw saturates: with full-range s8 weights and shifted s8
// activations pairs leave int16 often, and avx2_maddubs must follow each order's pairs exactly.
TEST_P(VnniConv, KOrderDecidesThePairs) {
  const ConvCase c{1, 4, 4, 3, 4, 2, 2, 1, 1, 0, 0, 0, 0, 1, 1, 1};
  for (ConvKOrder order : {ConvKOrder::hwc, ConvKOrder::chw})
    ConvTester().shape(c).order(order).activations(ActivationType::s8, 0).seed(99).test(isa());
}

// The same convolution in both K orders: identical on the exact ISAs, different on avx2_maddubs
// (the pairs differ, so what saturates differs).
TEST_P(VnniConv, OnlyMaddubsDependsOnTheKOrder) {
  Conv2dParams p;
  p.height = p.width = 4;
  p.channels = 3;
  p.out_channels = 4;
  p.kernel_h = p.kernel_w = 2;
  p.quant.a_type = ActivationType::s8;
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> byte(-128, 127);
  std::vector<std::int8_t> x(4 * 4 * 3), w(4 * 3 * 2 * 2);
  for (auto& v : x) v = static_cast<std::int8_t>(byte(rng));
  for (auto& v : w) v = static_cast<std::int8_t>(byte(rng));
  std::vector<std::int32_t> y[2];
  for (int i = 0; i < 2; ++i) {
    p.k_order = i == 0 ? ConvKOrder::hwc : ConvKOrder::chw;
    y[i].resize(3 * 3 * 4);
    conv2d(pack_conv2d(p, w, isa()), x.data(), y[i].data());
  }
  if (isa() == Isa::avx2_maddubs)
    EXPECT_NE(y[0], y[1]);
  else
    EXPECT_EQ(y[0], y[1]);
}

}  // namespace
}  // namespace qc::vnni
