// What every benchmark here shares: each prints its benchmarks (Google Benchmark) and then their
// ratios to a baseline measured in the same process, from the median of repeated runs of CPU time.
#pragma once

#include <benchmark/benchmark.h>

#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace qc::bench {

// Collects one counter ("GOPS", "items_per_second") per benchmark as the runs are reported, keyed by
// the benchmark's name and arguments without repetition or aggregate suffixes. With repetitions the median
// stands for the benchmark (not the last repetition, nor the mean); a single run stands for itself.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  explicit RatioReporter(std::string counter) : counter_(std::move(counter)) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.error_occurred) continue;
      const auto it = r.counters.find(counter_);
      if (it == r.counters.end()) continue;
      // The function's name and its arguments ("BM_X/1024/1"), without repetition or time suffixes.
      const std::string name =
          r.run_name.args.empty() ? r.run_name.function_name : r.run_name.function_name + "/" + r.run_name.args;
      if (r.run_type == Run::RT_Aggregate) {
        if (r.aggregate_name != "median") continue;
        values_[name] = it->second.value;
        medians_.insert(name);
      } else if (!medians_.contains(name)) {
        values_[name] = it->second.value;
      }
    }
  }

  // The counter of benchmark `name`; 0 where it did not run (filtered out, or skipped).
  double value(const std::string& name) const {
    const auto it = values_.find(name);
    return it == values_.end() ? 0.0 : it->second;
  }
  const std::map<std::string, double>& values() const { return values_; }

 private:
  std::string counter_;
  std::map<std::string, double> values_;
  std::set<std::string> medians_;
};

// benchmark::Initialize with medians of 7 repetitions (aggregates only) unless the command line
// asks for other repetitions. Benchmarks measure CPU time (none uses UseRealTime): the machines
// these run on are shared, and wall clock counts what others do.
inline void initialize(int* argc, char** argv) {
  static std::vector<char*> args;
  static char repetitions[] = "--benchmark_repetitions=7";
  static char aggregates[] = "--benchmark_report_aggregates_only=true";
  bool given = false;
  for (int i = 0; i < *argc; ++i) {
    args.push_back(argv[i]);
    if (i > 0 && std::strncmp(argv[i], "--benchmark_repetitions", 23) == 0) given = true;
  }
  if (!given) {
    args.push_back(repetitions);
    args.push_back(aggregates);
  }
  args.push_back(nullptr);
  *argc = static_cast<int>(args.size()) - 1;
  benchmark::Initialize(argc, args.data());
}

}  // namespace qc::bench
