// The backend interface: implementations under test. A backend sees op requests (inputs and
// parameters), never the expected answer; the harness joins it to the oracle. Part of the core: a
// backend (built in, a plugin, an exec runner) compiles against the core alone.
#pragma once

#include "qconform/ops.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace qc {

struct Availability {
  bool available = true;
  std::string reason;  // why not, when not (e.g. "CPU lacks avx512_vnni")
};

// A backend whose calls run outside this process (an exec runner) reports a fault there -- the
// program crashed, hung past the timeout, or answered with something that is not a reply -- by
// throwing this from run(); the runner turns it into a CRASH or TIMEOUT verdict with the message
// (which carries the program's stderr tail). device_lost: the device the backend computes on is
// unusable for the rest of this process (a GPU context after a kernel fault); the runner reports
// this call as CRASH and every later call of the backend as "device lost since case X" without
// making it.
class BackendFault : public std::runtime_error {
 public:
  enum class Kind : std::uint8_t { crash, timeout, device_lost };
  BackendFault(Kind kind, const std::string& what) : std::runtime_error(what), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
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
  // True when this backend already contains its faults outside this process and enforces its own
  // timeout (exec runners): the runner's --isolate then calls it directly instead of forking.
  virtual bool contains_faults() const { return false; }
};

}  // namespace qc
