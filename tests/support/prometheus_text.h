// A strict reader of the Prometheus text exposition format (0.0.4), for tests: it checks the grammar
// of every line, that each family's TYPE precedes its samples and appears once, that a family's samples
// are contiguous, and that histograms are cumulative with a +Inf bucket equal to _count.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace streamd::testing {

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct Exposition {
  std::vector<Sample> samples;
  std::map<std::string, std::string> types;  // family → type
  // The value of the one sample with this name and these labels; nullopt when absent.
  std::optional<double> value(const std::string& name,
                              const std::map<std::string, std::string>& labels = {}) const;
};

// The parsed exposition, or an error naming the line.
struct ParseOutcome {
  std::optional<Exposition> exposition;
  std::string error;
};

ParseOutcome parse_prometheus_text(const std::string& text);

}  // namespace streamd::testing
