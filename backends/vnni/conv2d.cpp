// NHWC conv2d on the GEMM driver: one GEMM per group with M = batch·OH·OW output pixels,
// N = OC/groups, K = KH·KW·C/groups.
//
// Rows of A come from the image in one of three ways:
//   pointwise       1x1, stride 1, no padding: row m is pixel m's channels, a strided matrix
//                   (read in place by the kernel when u8, Cg % 4 == 0 and no weight zero point).
//   implicit_gemm   the A packer gathers each row's K-range straight from the image into the
//                   cache-resident A block: one memcpy per in-image kernel row in hwc order (with
//                   groups = 1 and dilation_w = 1 the KW taps' channels are contiguous in NHWC),
//                   else one per tap, or one byte per element in chw order; out-of-image taps
//                   are the zero point byte.
//   im2col          the same gather into a whole [M, K] matrix first (KH·KW times the image), then
//                   the GEMM path over it.
// The default is implicit_gemm. On the 1x56x56x64 -> 64, 3x3 layer of benchmarks/vnni_bench.cpp
// (Zen 5) it ran ~605 GOPS against ~525-570 for im2col with vnni512 (the im2col buffer, 1.8 MB,
// leaves L2 and is read back), and the two tie with the 256-bit kernels (~300 avxvnni, ~195
// avx2_maddubs), where the multiply-adds dominate.
#include "backends/vnni/driver.hpp"
#include "qconform/error.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>

namespace qc::vnni {

std::string_view name(ConvKOrder o) { return o == ConvKOrder::hwc ? "hwc" : "chw"; }
std::string_view name(ConvStrategy s) { return s == ConvStrategy::implicit_gemm ? "implicit_gemm" : "im2col"; }

std::pair<std::int64_t, std::int64_t> conv_output_size(const ConvGeometry& g, std::string_view who) {
  const auto fail = [who](const std::string& what) { throw InputError(std::string(who) + ": " + what); };
  const auto at_least = [&fail](std::int64_t v, std::int64_t min, const char* field) {
    if (v < min) fail(std::string(field) + " = " + std::to_string(v) + " must be at least " + std::to_string(min));
  };
  at_least(g.batch, 1, "batch");
  at_least(g.height, 1, "height");
  at_least(g.width, 1, "width");
  at_least(g.channels, 1, "channels");
  at_least(g.out_channels, 1, "out_channels");
  at_least(g.kernel_h, 1, "kernel_h");
  at_least(g.kernel_w, 1, "kernel_w");
  at_least(g.stride_h, 1, "stride_h");
  at_least(g.stride_w, 1, "stride_w");
  at_least(g.dilation_h, 1, "dilation_h");
  at_least(g.dilation_w, 1, "dilation_w");
  at_least(g.pad_top, 0, "pad_top");
  at_least(g.pad_left, 0, "pad_left");
  at_least(g.pad_bottom, 0, "pad_bottom");
  at_least(g.pad_right, 0, "pad_right");
  at_least(g.groups, 1, "groups");
  if (g.channels % g.groups != 0 || g.out_channels % g.groups != 0)
    fail("groups = " + std::to_string(g.groups) + " must divide channels (" + std::to_string(g.channels) +
         ") and out_channels (" + std::to_string(g.out_channels) + ")");
  const std::int64_t eh = g.height + g.pad_top + g.pad_bottom - g.dilation_h * (g.kernel_h - 1) - 1;
  const std::int64_t ew = g.width + g.pad_left + g.pad_right - g.dilation_w * (g.kernel_w - 1) - 1;
  if (eh < 0 || ew < 0) fail("the dilated kernel is larger than the padded input");
  return {eh / g.stride_h + 1, ew / g.stride_w + 1};
}

namespace {

[[noreturn]] void fail(const std::string& what) { throw InputError("vnni conv2d: " + what); }

struct ConvSizes {
  std::int64_t cg, ocg, k, oh, ow;
};

ConvSizes resolve(const Conv2dParams& p) {
  const auto [oh, ow] = conv_output_size(p, "vnni conv2d");
  ConvSizes s;
  s.cg = p.channels / p.groups;
  s.ocg = p.out_channels / p.groups;
  s.k = p.kernel_h * p.kernel_w * s.cg;
  s.oh = oh;
  s.ow = ow;
  return s;
}

// Tap k of a dot product, in the chosen K order.
struct Tap {
  std::int64_t kh, kw, c;
};
Tap tap_of(std::int64_t k, ConvKOrder order, std::int64_t kh_n, std::int64_t kw_n, std::int64_t cg) {
  if (order == ConvKOrder::hwc) return {k / cg / kw_n, k / cg % kw_n, k % cg};
  return {k / kw_n % kh_n, k % kw_n, k / (kh_n * kw_n)};
}

// Group g's part of a per-output-channel vector; an empty or one-entry (per-tensor) one as it is.
// (With OC = 1 a one-entry vector is both, and either reading gives the same value.)
template <class V>
V slice(const V& v, std::int64_t start, std::int64_t count) {
  if (v.size() <= 1) return v;
  return V(v.begin() + start, v.begin() + start + count);
}

PackedConv2d pack(const Conv2dParams& p, std::span<const std::int8_t> w, Isa isa) {
  const ConvSizes s = resolve(p);
  detail::validate_quant_spec(p.quant, p.out_channels);
  const std::int64_t taps = p.kernel_h * p.kernel_w;
  if (static_cast<std::int64_t>(w.size()) != p.out_channels * s.cg * taps)
    fail("weights have " + std::to_string(w.size()) +
         " values; expected OC·C/groups·KH·KW = " + std::to_string(p.out_channels * s.cg * taps));
  PackedConv2d pc;
  pc.params = p;
  pc.out_h = s.oh;
  pc.out_w = s.ow;
  for (std::int64_t g = 0; g < p.groups; ++g) {
    GemmParams gp;
    gp.n = s.ocg;
    gp.k = s.k;
    gp.w_layout = WeightLayout::n_by_k;
    gp.quant = p.quant;
    const std::int64_t oc0 = g * s.ocg;
    gp.quant.w_scales = slice(p.quant.w_scales, oc0, s.ocg);
    gp.quant.w_zero_points = slice(p.quant.w_zero_points, oc0, s.ocg);
    gp.quant.bias = slice(p.quant.bias, oc0, s.ocg);
    gp.quant.bias_f32 = slice(p.quant.bias_f32, oc0, s.ocg);
    std::vector<std::int8_t> wg(static_cast<std::size_t>(s.ocg * s.k));
    for (std::int64_t n = 0; n < s.ocg; ++n)
      for (std::int64_t k = 0; k < s.k; ++k) {
        const Tap t = tap_of(k, p.k_order, p.kernel_h, p.kernel_w, s.cg);
        wg[static_cast<std::size_t>(n * s.k + k)] =
            w[static_cast<std::size_t>(((oc0 + n) * s.cg + t.c) * taps + t.kh * p.kernel_w + t.kw)];
      }
    pc.groups.push_back(pack_weights(gp, wg, isa));
  }
  return pc;
}

struct ImageRows {
  const std::uint8_t* x = nullptr;
  const Conv2dParams* p = nullptr;
  ConvSizes s{};
  std::int64_t group = 0;
  std::uint8_t pad = 0;  // the activation zero point's byte
  std::uint64_t id = 0;  // for the packers' per-thread cache (NextPixel)
};

// The packer asks for rows in order: the pixel of the next row is kept to save three divisions per
// row (a 64-bit division costs about a tenth of a row's multiply-adds for a 3x3x64 layer). One per
// thread: the row groups of a GEMM run on several threads at once, each asking in its own order.
// Keyed by the image's id, unique to each call (a new call's ImageRows may sit at an old address).
struct NextPixel {
  std::uint64_t image = 0;
  std::int64_t row = -1, b = 0, oh = 0, ow = 0;
};
thread_local NextPixel t_next;
std::atomic<std::uint64_t> g_image_ids{0};

const std::uint8_t* fetch_image_row(const void* context, std::int64_t row, std::int64_t k0, std::int64_t len,
                                    std::uint8_t* scratch) {
  const auto& im = *static_cast<const ImageRows*>(context);
  const Conv2dParams& p = *im.p;
  std::int64_t b, oh, ow;
  NextPixel& next = t_next;
  if (next.image == im.id && row == next.row) {
    b = next.b;
    oh = next.oh;
    ow = next.ow;
  } else {
    const std::int64_t pixels = im.s.oh * im.s.ow;
    b = row / pixels;
    oh = row % pixels / im.s.ow;
    ow = row % im.s.ow;
  }
  next.image = im.id;
  next.row = row + 1;
  next.b = b;
  next.oh = oh;
  next.ow = ow + 1;
  if (next.ow == im.s.ow) {
    next.ow = 0;
    if (++next.oh == im.s.oh) {
      next.oh = 0;
      ++next.b;
    }
  }
  const std::int64_t ih0 = oh * p.stride_h - p.pad_top, iw0 = ow * p.stride_w - p.pad_left;
  const std::uint8_t* channels0 = im.x + b * p.height * p.width * p.channels + im.group * im.s.cg;
  const std::int64_t end = k0 + len;
  if (p.k_order == ConvKOrder::hwc) {
    // k = (kh·KW + kw)·Cg + c. One tap's Cg channels are contiguous; with groups = 1 and
    // dilation_w = 1 so are the in-image taps of one kernel row (KW·C bytes): one copy each.
    const bool rows_contiguous = im.s.cg == p.channels && p.dilation_w == 1;
    std::int64_t c = 0, kh = 0, kw = 0;
    if (k0 > 0) {  // a later K block
      const std::int64_t tap = k0 / im.s.cg;
      c = k0 % im.s.cg;
      kh = tap / p.kernel_w;
      kw = tap % p.kernel_w;
    }
    for (std::int64_t k = k0; k < end;) {
      const std::int64_t ih = ih0 + kh * p.dilation_h, iw = iw0 + kw * p.dilation_w;
      const bool inside = ih >= 0 && ih < p.height && iw >= 0 && iw < p.width;
      std::int64_t available = im.s.cg - c;  // contiguous bytes from this position
      if (inside && rows_contiguous) {
        const std::int64_t last_kw = std::min(p.kernel_w, p.width - iw0) - 1;  // this row's last in-image tap
        available += (last_kw - kw) * p.channels;
      }
      const std::int64_t run = std::min(available, end - k);
      if (inside)
        std::memcpy(scratch + (k - k0), channels0 + (ih * p.width + iw) * p.channels + c,
                    static_cast<std::size_t>(run));
      else
        std::memset(scratch + (k - k0), im.pad, static_cast<std::size_t>(run));
      k += run;
      for (c += run; c >= im.s.cg && k < end; c -= im.s.cg)  // step over the taps the run covered
        if (++kw == p.kernel_w) {
          kw = 0;
          ++kh;
        }
    }
  } else {
    // k = (c·KH + kh)·KW + kw: one byte per element.
    for (std::int64_t k = k0; k < end; ++k) {
      const Tap t = tap_of(k, ConvKOrder::chw, p.kernel_h, p.kernel_w, im.s.cg);
      const std::int64_t ih = ih0 + t.kh * p.dilation_h, iw = iw0 + t.kw * p.dilation_w;
      const bool inside = ih >= 0 && ih < p.height && iw >= 0 && iw < p.width;
      scratch[k - k0] = inside ? channels0[(ih * p.width + iw) * p.channels + t.c] : im.pad;
    }
  }
  return scratch;
}

struct StridedRows {
  const std::uint8_t* x;
  std::int64_t stride;
};

const std::uint8_t* fetch_strided_row(const void* context, std::int64_t row, std::int64_t k0, std::int64_t,
                                      std::uint8_t*) {
  const auto& r = *static_cast<const StridedRows*>(context);
  return r.x + row * r.stride + k0;
}

}  // namespace

PackedConv2d pack_conv2d(const Conv2dParams& p, std::span<const std::int8_t> w_oihw, Isa isa) {
  return pack(p, w_oihw, isa);
}

PackedConv2d pack_conv2d_int4(const Conv2dParams& p, std::span<const std::uint8_t> packed_oihw, Isa isa) {
  const ConvSizes s = resolve(p);
  const std::vector<std::int8_t> w = detail::unpack_int4(packed_oihw, p.out_channels * s.cg * p.kernel_h * p.kernel_w,
                                                         p.quant.w_type, "pack_conv2d_int4");
  return pack(p, w, isa);
}

template <class A, class Out>
void conv2d(const PackedConv2d& w, const A* input, Out* output) {
  if (w.groups.empty()) throw InputError("vnni conv2d: the packed convolution has no groups");
  detail::check_types<A, Out>(w.groups[0], "conv2d");
  detail::check_runnable(w.groups[0]);
  if (!input || !output) throw InputError("vnni conv2d: null input or output pointer");
  const Conv2dParams& p = w.params;
  const ConvSizes s = resolve(p);
  const std::int64_t m = p.batch * s.oh * s.ow;
  const auto* x = reinterpret_cast<const std::uint8_t*>(input);
  const bool pointwise = p.kernel_h == 1 && p.kernel_w == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_top == 0 &&
                         p.pad_left == 0 && p.pad_bottom == 0 && p.pad_right == 0;
  std::vector<std::uint8_t> columns;  // im2col
  for (std::int64_t g = 0; g < p.groups; ++g) {
    Out* out = output + g * s.ocg;
    if (pointwise) {
      const StridedRows rows{x + g * s.cg, p.channels};
      detail::run_gemm(w.groups[static_cast<std::size_t>(g)], m, {&rows, &fetch_strided_row, rows.x, rows.stride}, out,
                       p.out_channels);
      continue;
    }
    const ImageRows image{x, &p, s, g, static_cast<std::uint8_t>(p.quant.a_zero_point), ++g_image_ids};
    if (p.strategy == ConvStrategy::implicit_gemm) {
      detail::run_gemm(w.groups[static_cast<std::size_t>(g)], m, {&image, &fetch_image_row}, out, p.out_channels);
    } else {
      columns.resize(static_cast<std::size_t>(m * s.k));
      for (std::int64_t r = 0; r < m; ++r) fetch_image_row(&image, r, 0, s.k, columns.data() + r * s.k);
      const StridedRows rows{columns.data(), s.k};
      detail::run_gemm(w.groups[static_cast<std::size_t>(g)], m, {&rows, &fetch_strided_row, rows.x, rows.stride}, out,
                       p.out_channels);
    }
  }
}

#define QC_VNNI_CONV(A, O) template void conv2d<A, O>(const PackedConv2d&, const A*, O*);
QC_VNNI_CONV(std::uint8_t, std::int32_t)
QC_VNNI_CONV(std::uint8_t, float)
QC_VNNI_CONV(std::uint8_t, std::uint8_t)
QC_VNNI_CONV(std::uint8_t, std::int8_t)
QC_VNNI_CONV(std::int8_t, std::int32_t)
QC_VNNI_CONV(std::int8_t, float)
QC_VNNI_CONV(std::int8_t, std::uint8_t)
QC_VNNI_CONV(std::int8_t, std::int8_t)
#undef QC_VNNI_CONV

}  // namespace qc::vnni
