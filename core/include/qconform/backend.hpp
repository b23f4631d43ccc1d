// The backend interface: implementations under test. A backend sees op requests (inputs and
// parameters), never the expected answer; the harness joins it to the oracle. Part of the core: a
// backend (built in, a plugin, an exec runner) compiles against the core alone.
#pragma once

#include "qconform/ops.hpp"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace qc {

struct Availability {
  bool available = true;
  std::string reason;  // why not, when not (e.g. "CPU lacks avx512_vnni")
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  // The preset this backend claims to implement bit-exactly.
  virtual std::string claim() const = 0;
  virtual Availability availability() const { return {}; }
  // Facts about the device and build that affect numerics, for the report's metadata: GPU name,
  // driver and runtime versions, compile flags (contraction, fast math), ISA. Empty by default.
  virtual std::map<std::string, std::string> facts() const { return {}; }
  // Whether this backend implements this request at all (op, dtypes, granularity); the reason
  // is reported with a SKIP verdict.
  virtual Availability supports(const OpRequest& op) const = 0;
  virtual Tensor run(const OpRequest& op) = 0;
};

}  // namespace qc
