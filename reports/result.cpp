#include "reports/result.hpp"

namespace qc {

std::string_view name(Verdict v) {
  switch (v) {
    case Verdict::pass:
      return "PASS";
    case Verdict::fail:
      return "FAIL";
    case Verdict::xfail:
      return "XFAIL";
    case Verdict::xpass:
      return "XPASS";
    case Verdict::skip:
      return "SKIP";
    case Verdict::crash:
      return "CRASH";
    case Verdict::timeout:
      return "TIMEOUT";
  }
  return "?";
}

std::string_view name(AgreementStatus s) {
  switch (s) {
    case AgreementStatus::holds:
      return "holds";
    case AgreementStatus::broken:
      return "broken";
    case AgreementStatus::unchecked:
      return "unchecked";
  }
  return "?";
}

std::map<std::string, std::int64_t> RunReport::verdict_counts() const {
  std::map<std::string, std::int64_t> m;
  for (const CaseResult& c : cases)
    for (const BackendResult& b : c.backends) ++m[std::string(name(b.verdict))];
  return m;
}

}  // namespace qc
