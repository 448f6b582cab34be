#include "tests/support/prometheus_text.h"

#include <cmath>
#include <cstdlib>
#include <set>
#include <sstream>

namespace streamd::testing {
namespace {

bool is_name_char(char c, bool first, bool colon_ok) {
  const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon_ok && c == ':');
  return alpha || (!first && c >= '0' && c <= '9');
}

bool take_name(const std::string& s, size_t& i, std::string& out, bool colon_ok) {
  const size_t start = i;
  while (i < s.size() && is_name_char(s[i], i == start, colon_ok)) ++i;
  out = s.substr(start, i - start);
  return !out.empty();
}

bool parse_value(const std::string& text, double& out) {
  if (text == "+Inf") {
    out = INFINITY;
  } else if (text == "-Inf") {
    out = -INFINITY;
  } else if (text == "NaN") {
    out = NAN;
  } else {
    if (text.empty()) return false;
    char* end = nullptr;
    out = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size()) return false;
  }
  return true;
}

// The family a sample belongs to: histogram suffixes fold into their base name.
std::string family_of(const std::string& name, const std::map<std::string, std::string>& types) {
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string s(suffix);
    if (name.size() > s.size() && name.ends_with(s)) {
      const std::string base = name.substr(0, name.size() - s.size());
      auto it = types.find(base);
      if (it != types.end() && it->second == "histogram") return base;
    }
  }
  return name;
}

}  // namespace

std::optional<double> Exposition::value(const std::string& name,
                                        const std::map<std::string, std::string>& labels) const {
  for (const Sample& s : samples) {
    if (s.name == name && s.labels == labels) return s.value;
  }
  return std::nullopt;
}

ParseOutcome parse_prometheus_text(const std::string& text) {
  Exposition out;
  std::set<std::string> finished;  // families whose samples have ended
  std::string current;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  auto fail = [&](const std::string& why) {
    return ParseOutcome{std::nullopt, "line " + std::to_string(number) + ": " + why + ": " + line};
  };
  if (!text.empty() && text.back() != '\n')
    return ParseOutcome{std::nullopt, "the text does not end with a newline"};
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::istringstream words(line);
      std::string hash, keyword, name;
      words >> hash >> keyword >> name;
      if (keyword == "TYPE") {
        std::string type;
        words >> type;
        if (type != "counter" && type != "gauge" && type != "histogram" && type != "summary" &&
            type != "untyped") {
          return fail("unknown type");
        }
        if (out.types.count(name)) return fail("second TYPE for a family");
        out.types[name] = type;
      }
      continue;
    }
    Sample sample;
    size_t i = 0;
    if (!take_name(line, i, sample.name, true)) return fail("bad metric name");
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        std::string label;
        if (!take_name(line, i, label, false)) return fail("bad label name");
        if (i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"')
          return fail("expected =\" after label");
        i += 2;
        std::string value;
        while (i < line.size() && line[i] != '"') {
          if (line[i] == '\\') {
            if (i + 1 >= line.size()) return fail("dangling escape");
            const char e = line[i + 1];
            if (e == 'n') {
              value += '\n';
            } else if (e == '\\' || e == '"') {
              value += e;
            } else {
              return fail("bad escape");
            }
            i += 2;
          } else {
            value += line[i++];
          }
        }
        if (i >= line.size()) return fail("unterminated label value");
        ++i;
        if (sample.labels.count(label)) return fail("repeated label");
        sample.labels[label] = value;
        if (i < line.size() && line[i] == ',') ++i;
      }
      if (i >= line.size()) return fail("unterminated label set");
      ++i;
    }
    if (i >= line.size() || line[i] != ' ') return fail("expected a space before the value");
    std::istringstream rest(line.substr(i + 1));
    std::string value_text, timestamp, extra;
    rest >> value_text >> timestamp >> extra;
    if (!extra.empty()) return fail("trailing text");
    if (!parse_value(value_text, sample.value)) return fail("bad value");
    const std::string family = family_of(sample.name, out.types);
    if (!out.types.count(family)) return fail("sample before its family's TYPE");
    if (family != current) {
      if (finished.count(family)) return fail("family's samples are not contiguous");
      if (!current.empty()) finished.insert(current);
      current = family;
    }
    out.samples.push_back(std::move(sample));
  }
  // Histograms: cumulative buckets ending in +Inf, equal to _count, per label set.
  for (const auto& [family, type] : out.types) {
    if (type != "histogram") continue;
    std::map<std::map<std::string, std::string>, std::vector<const Sample*>> buckets;
    for (const Sample& s : out.samples) {
      if (s.name != family + "_bucket") continue;
      auto labels = s.labels;
      if (!labels.count("le")) return ParseOutcome{std::nullopt, family + ": bucket without le"};
      labels.erase("le");
      buckets[labels].push_back(&s);
    }
    for (const auto& [labels, list] : buckets) {
      double previous = 0;
      for (const Sample* s : list) {
        if (s->value < previous) return ParseOutcome{std::nullopt, family + ": buckets not cumulative"};
        previous = s->value;
      }
      if (list.back()->labels.at("le") != "+Inf")
        return ParseOutcome{std::nullopt, family + ": no +Inf bucket"};
      auto count = out.value(family + "_count", labels);
      if (!count || *count != list.back()->value) {
        return ParseOutcome{std::nullopt, family + ": +Inf bucket differs from _count"};
      }
      if (!out.value(family + "_sum", labels)) return ParseOutcome{std::nullopt, family + ": no _sum"};
    }
  }
  return ParseOutcome{std::move(out), ""};
}

}  // namespace streamd::testing
