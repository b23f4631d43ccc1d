#include "oracles/qlinear_fast.hpp"

#include "oracles/requantize_detail.hpp"
#include "qconform/error.hpp"
#include "qconform/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <unordered_map>

namespace qc::qlinear_fast {

namespace {

// Elements per block: the gathered accumulators, outputs and labels of one block stay in cache.
constexpr std::int64_t kPairBlock = 8192;
// A pair's channel is made once this many of its elements have been seen on a thread: making one
// costs about two definitions (the multiplier and ExactProduct in rationals, and the definition at
// acc = 0), so a pair met once or twice (per-row A with per-column B: every element its own pair)
// is cheaper by definition.
constexpr std::int64_t kPairChannelAfter = 4;

// One (A scale, B scale) pair on one thread.
struct PairState {
  std::int64_t seen = 0;                             // elements met so far
  bool tried = false;                                // the channel was made (or could not be)
  std::unique_ptr<RequantizeMultiplier> multiplier;  // outlives `channel`, which points to it
  requantize_detail::FastChannelPtr channel;         // null: every element by definition
  std::int64_t count = 0, cursor = 0;                // in the current block
  std::int32_t a = 0, b = 0;                         // the scale indices
};

// The pairs one thread has met, by key a * nb + b: a table where the keys are few, else a map.
class PairTable {
 public:
  PairTable(std::int64_t keys, std::int64_t nb) : nb_(nb) {
    if (keys <= (std::int64_t{1} << 16)) dense_.assign(static_cast<std::size_t>(keys), -1);
  }
  std::int32_t slot(std::int32_t a, std::int32_t b) {
    const std::int64_t key = std::int64_t{a} * nb_ + b;
    if (key == last_key_) return last_slot_;
    std::int32_t* at;
    if (!dense_.empty()) {
      at = &dense_[static_cast<std::size_t>(key)];
    } else {
      at = &sparse_.try_emplace(key, -1).first->second;
    }
    if (*at < 0) {
      *at = static_cast<std::int32_t>(pairs.size());
      pairs.emplace_back();
      pairs.back().a = a;
      pairs.back().b = b;
    }
    last_key_ = key;
    last_slot_ = *at;
    return *at;
  }
  std::vector<PairState> pairs;

 private:
  std::int64_t nb_;
  std::int64_t last_key_ = -1;
  std::int32_t last_slot_ = -1;
  std::vector<std::int32_t> dense_;
  std::unordered_map<std::int64_t, std::int32_t> sparse_;
};

// The pair's multiplier as the definition's caller forms it (qlinear.cpp requantized_output), and
// its fast channel. A multiplier the definition rejects leaves the pair to the definition, which
// raises the error at the element where it would have.
void make_pair_channel(PairState& pair, const RequantizeStage& s, DType out) {
  pair.tried = true;
  const RequantizeScales scales{(*s.a_scales)[static_cast<std::size_t>(pair.a)],
                                (*s.b_scales)[static_cast<std::size_t>(pair.b)], s.out_scale, s.scale_dtype};
  try {
    pair.multiplier = std::make_unique<RequantizeMultiplier>(prepare_multiplier(scales, *s.policy));
  } catch (const InputError&) {
    return;
  }
  try {  // (make_fast_channel already leaves a channel the definition rejects to the definition)
    pair.channel = requantize_detail::make_fast_channel(*pair.multiplier, s.zero_point, out, *s.policy);
  } catch (const InputError&) {
  }
}

// y[to[j]] = from[j] for one element's storage bytes.
template <class T>
void scatter(const std::byte* from, std::byte* to, const std::int32_t* where, std::int64_t n, std::int64_t base) {
  const auto* f = reinterpret_cast<const T*>(from);
  auto* t = reinterpret_cast<T*>(to);
  for (std::int64_t j = 0; j < n; ++j) t[base + where[j]] = f[j];
}

// One thread's elements [e0, e1).
class PairRun {
 public:
  PairRun(const RequantizeStage& s, Tensor& y, std::vector<Label>& labels)
      : s_(s),
        y_(y),
        labels_(labels),
        table_(static_cast<std::int64_t>(s.a_scales->size() * s.b_scales->size()),
               static_cast<std::int64_t>(s.b_scales->size())),
        q_(y.dtype(), {kPairBlock}) {
    const auto n = static_cast<std::size_t>(kPairBlock);
    slot_.resize(n);
    acc32_.resize(n);
    gathered_.resize(n);
    where_.resize(n);
    block_labels_.resize(n);
    unsettled_.resize(n);
  }

  // Returns the elements left to the definition, in increasing order.
  std::vector<std::int64_t> run(std::int64_t e0, std::int64_t e1) {
    std::vector<std::int64_t> slow;
    for (std::int64_t b0 = e0; b0 < e1; b0 += kPairBlock) block(b0, std::min(kPairBlock, e1 - b0), slow);
    std::sort(slow.begin(), slow.end());  // each block's declined elements follow its direct ones
    return slow;
  }

 private:
  void block(std::int64_t b0, std::int64_t n, std::vector<std::int64_t>& slow) {
    const ScaledAccumulators& acc = *s_.acc;
    const bool biased = !s_.int_bias->empty(), may_overflow = !acc.exact_where_different.empty();
    // Pass 1: each element's pair, or -1 for the definition; the policy accumulator as int32.
    std::vector<std::int32_t> touched;
    std::int64_t row = b0 / acc.cols, col = b0 % acc.cols;
    const auto row_tables = [&](std::int32_t& a, const std::int32_t*& b_row) {
      a = acc.a_index[static_cast<std::size_t>(row)];
      b_row = acc.b_index.data() + (row / acc.rows_per_b) * acc.cols;
    };
    std::int32_t a = 0;
    const std::int32_t* b_row = nullptr;
    if (n > 0) row_tables(a, b_row);
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t e = b0 + i;
      const std::int32_t ai = a, bi = b_row[col];  // before the row advances
      const std::int64_t channel = acc.channel.empty() ? col : acc.channel[static_cast<std::size_t>(e)];
      if (++col == acc.cols && i + 1 < n) {
        col = 0;
        ++row;
        row_tables(a, b_row);
      }
      const std::int64_t held = acc.value[static_cast<std::size_t>(e)];
      const std::int64_t v =
          biased ? add_in_accumulator(s_.accumulation, held, (*s_.int_bias)[static_cast<std::size_t>(channel)]) : held;
      // The channels take int32 accumulators; an overflowed one is labelled saturated by the definition's caller.
      if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max() ||
          (may_overflow && acc.exact_where_different.count(e))) {
        slot_[static_cast<std::size_t>(i)] = -1;
        continue;
      }
      acc32_[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(v);
      const std::int32_t k = table_.slot(ai, bi);
      slot_[static_cast<std::size_t>(i)] = k;
      if (table_.pairs[static_cast<std::size_t>(k)].count++ == 0) touched.push_back(k);
    }
    // Each pair's place in the gathered buffer; pairs without a channel give their elements to the definition.
    std::int64_t offset = 0;
    for (const std::int32_t k : touched) {
      PairState& pair = table_.pairs[static_cast<std::size_t>(k)];
      pair.seen += pair.count;
      if (!pair.tried && pair.seen >= kPairChannelAfter) make_pair_channel(pair, s_, y_.dtype());
      pair.cursor = offset;
      if (pair.channel) offset += pair.count;
    }
    // Pass 2: gather.
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int32_t k = slot_[static_cast<std::size_t>(i)];
      if (k < 0 || !table_.pairs[static_cast<std::size_t>(k)].channel) {
        slow.push_back(b0 + i);
        continue;
      }
      const auto at = static_cast<std::size_t>(table_.pairs[static_cast<std::size_t>(k)].cursor++);
      gathered_[at] = acc32_[static_cast<std::size_t>(i)];
      where_[at] = static_cast<std::int32_t>(i);
    }
    // Each pair's run through its channel, then the values and labels scattered back.
    declined_.clear();
    for (const std::int32_t k : touched) {
      PairState& pair = table_.pairs[static_cast<std::size_t>(k)];
      if (pair.channel) {
        const std::int64_t end = pair.cursor, begin = end - pair.count;
        requantize_detail::run_fast_channel(*pair.channel, *s_.policy, y_.dtype(), gathered_.data(), q_,
                                            block_labels_.data(), unsettled_.data(), begin, end, declined_);
      }
      pair.count = 0;
    }
    const std::byte* from = q_.bytes().data();
    std::byte* to = y_.bytes().data();
    switch (info(y_.dtype()).storage_bytes) {
      case 1:
        scatter<std::uint8_t>(from, to, where_.data(), offset, b0);
        break;
      case 2:
        scatter<std::uint16_t>(from, to, where_.data(), offset, b0);
        break;
      case 4:
        scatter<std::uint32_t>(from, to, where_.data(), offset, b0);
        break;
      default:  // no channel decides a wider output (run_fast_channel declines it): the definition writes it
        break;
    }
    Label* labels = labels_.data() + b0;
    for (std::int64_t j = 0; j < offset; ++j)
      labels[where_[static_cast<std::size_t>(j)]] = block_labels_[static_cast<std::size_t>(j)];
    for (const std::int64_t j : declined_) slow.push_back(b0 + where_[static_cast<std::size_t>(j)]);
  }

  const RequantizeStage& s_;
  Tensor& y_;
  std::vector<Label>& labels_;
  PairTable table_;
  Tensor q_;  // the block's outputs, in gathered order
  std::vector<std::int32_t> slot_, acc32_, gathered_, where_;
  std::vector<Label> block_labels_;
  std::vector<std::uint8_t> unsettled_;
  std::vector<std::int64_t> declined_;
};

}  // namespace

std::int64_t requantize_by_pairs(const RequantizeStage& s, Tensor& y, std::vector<Label>& labels,
                                 const std::function<void(const std::vector<std::int64_t>&)>& definition) {
  std::atomic<std::int64_t> slow_count{0};
  parallel_ranges(y.size(), 4096, [&](std::int64_t e0, std::int64_t e1) {
    const std::vector<std::int64_t> slow = PairRun(s, y, labels).run(e0, e1);
    slow_count += static_cast<std::int64_t>(slow.size());
    definition(slow);
  });
  return slow_count.load();
}

// ---- Dequantized outputs with several segments or a float bias ---------------------------------

namespace {

// Doubles beyond these stay clear of underflow (every product and sum below is then exact or
// correctly rounded with the usual error bounds) and of overflow.
constexpr double kTinyDouble = 0x1p-900, kHugeDouble = 0x1p900;

bool moderate(double v) { return v == 0 || (std::fabs(v) >= kTinyDouble && std::fabs(v) <= kHugeDouble); }

// s + err = a + b exactly (Knuth's TwoSum; no overflow here).
void two_sum(double a, double b, double& s, double& err) {
  s = a + b;
  const double bb = s - a;
  err = (a - (s - bb)) + (b - bb);
}

// e += b exactly: Shewchuk's GROW-EXPANSION with zero elimination. e holds nonoverlapping
// components in increasing magnitude; their exact sum is the value.
void grow(std::vector<double>& e, double b) {
  double q = b;
  std::size_t out = 0;
  for (std::size_t i = 0; i < e.size(); ++i) {
    double s, err;
    two_sum(q, e[i], s, err);
    q = s;
    if (err != 0) e[out++] = err;
  }
  e.resize(out);
  if (q != 0) e.push_back(q);
}

// The components summed in double (smallest first), and a bound on that sum's error:
// (n - 1) u Σ|e_i| with u = 2^-53, taken generously.
double approximate(const std::vector<double>& e, double& error_bound) {
  double sum = 0, magnitude = 0;
  for (const double c : e) {
    sum += c;
    magnitude += std::fabs(c);
  }
  error_bound = magnitude * static_cast<double>(e.size() + 1) * 0x1p-52;
  return sum;
}

}  // namespace

// The one test of a double-double against out's grid (qlinear_fast.hpp): hi rounded to out is v
// correctly rounded when the margin kNearTieDistance + 2^-20 ulps exceeds every error here.
std::optional<std::uint64_t> clear_with_bound(double hi, double lo, double delta, DType out) {
  const std::uint64_t y_bits = double_to_float_bits(out, hi);
  const double y = float_bits_to_double(out, y_bits);
  if (!std::isfinite(y) || y == 0) return std::nullopt;
  int e;
  if (std::frexp(std::abs(y), &e) == 0.5) return std::nullopt;  // a power of two: the spacing changes here
  const double next = float_bits_to_double(out, y_bits + 1);    // one step away from zero
  if (!std::isfinite(next)) return std::nullopt;
  const double ulp = std::abs(next) - std::abs(y);  // exact: neighbours of one binade
  if (!(delta <= ulp * 0x1p-40)) return std::nullopt;
  const double d = ((hi - y) + lo) / ulp;  // hi - y exact (Sterbenz); the rest far below the margin
  if (!(std::abs(d) < 0.5 - kNearTieDistance - 0x1p-20)) return std::nullopt;
  return y_bits;
}

DequantizeFast::DequantizeFast(std::string compute, DType out, const std::vector<Rational>& float_bias) : out_(out) {
  compute_ = compute == "exact" ? Compute::exact
             : compute == "f32" ? Compute::f32
             : compute == "f64" ? Compute::f64
                                : Compute::none;
  bias_.reserve(float_bias.size());
  for (const Rational& b : float_bias) bias_.push_back(b.convert_to<double>());  // exact: a float tensor's value
}

std::optional<std::uint64_t> DequantizeFast::element(const std::int64_t* acc, const double* sa, const double* sb,
                                                     std::int64_t segments, std::int64_t channel) const {
  if (compute_ == Compute::none) return std::nullopt;
  constexpr std::int64_t kExactInDouble = std::int64_t{1} << 53;
  // v exactly: each acc_s * s_a * s_b is a double-double (the scale product exact in double, then
  // TwoProduct), the bias a double; their sum an expansion.
  thread_local std::vector<double> v;
  v.clear();
  for (std::int64_t s = 0; s < segments; ++s) {
    if (acc[s] > kExactInDouble || acc[s] < -kExactInDouble) return std::nullopt;
    const double p = sa[s] * sb[s];
    if (!moderate(p) || p == 0 || std::fma(sa[s], sb[s], -p) != 0) return std::nullopt;
    const auto a = static_cast<double>(acc[s]);
    const double hi = a * p;
    if (!moderate(hi)) return std::nullopt;
    grow(v, hi);
    grow(v, std::fma(a, p, -hi));
  }
  const double bias = bias_.empty() ? 0.0 : bias_[static_cast<std::size_t>(channel)];
  if (!moderate(bias)) return std::nullopt;
  if (!bias_.empty()) grow(v, bias);
  double hi_error = 0;  // unused: v - hi is formed exactly below
  const double hi = approximate(v, hi_error);
  if (!moderate(hi) || hi == 0) return std::nullopt;
  grow(v, -hi);  // v - hi, exactly
  double delta = 0;
  const double lo = approximate(v, delta);
  const std::optional<std::uint64_t> nearest = clear_with_bound(hi, lo, delta, out_);
  if (!nearest || compute_ == Compute::exact) return nearest;
  // The recipe in hardware: each operation one IEEE operation in the compute format (-ffp-contract=off,
  // FLT_EVAL_METHOD 0), as Arith rounds it.
  double y;
  if (compute_ == Compute::f32) {
    float sum = 0;
    for (std::int64_t s = 0; s < segments; ++s) {
      const float term = static_cast<float>(acc[s]) * (static_cast<float>(sa[s]) * static_cast<float>(sb[s]));
      sum = s == 0 ? term : sum + term;
    }
    if (!bias_.empty()) sum = sum + static_cast<float>(bias);
    y = static_cast<double>(sum);
  } else {
    double sum = 0;
    for (std::int64_t s = 0; s < segments; ++s) {
      const double term = static_cast<double>(acc[s]) * (sa[s] * sb[s]);
      sum = s == 0 ? term : sum + term;
    }
    if (!bias_.empty()) sum = sum + bias;
    y = sum;
  }
  if (!std::isfinite(y)) return std::nullopt;  // an overflow on the way: the definition labels it
  return double_to_float_bits(out_, y);
}

}  // namespace qc::qlinear_fast
