#include "reports/result.hpp"

namespace qc {

std::string_view name(Verdict v) { return table_name(v); }

std::string_view name(AgreementStatus s) { return table_name(s); }

std::map<std::string, std::int64_t> RunReport::verdict_counts() const {
  std::map<std::string, std::int64_t> m;
  for (const CaseResult& c : cases)
    for (const BackendResult& b : c.backends) ++m[std::string(name(b.verdict))];
  return m;
}

}  // namespace qc
