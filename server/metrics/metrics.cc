#include "server/metrics/metrics.h"

#include <cassert>
#include <charconv>
#include <cmath>

namespace streamd {
namespace {

[[maybe_unused]] bool valid_name(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

std::string format_value(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  // Shortest text that reads back to the same double: 0.3, not 0.29999999999999999.
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, ec == std::errc() ? end : buf);
}

std::string format_labels(const Labels& labels, const std::pair<std::string, std::string>* extra = nullptr) {
  if (labels.empty() && extra == nullptr) return "";
  std::string out = "{";
  bool first = true;
  auto add = [&](const std::string& k, const std::string& v) {
    if (!first) out += ',';
    first = false;
    out += k;
    out += "=\"";
    out += escape_label_value(v);
    out += '"';
  };
  for (const auto& [k, v] : labels) add(k, v);
  if (extra != nullptr) add(extra->first, extra->second);
  out += '}';
  return out;
}

const char* type_name(int type) {
  switch (type) {
    case 0:
      return "counter";
    case 1:
      return "gauge";
    default:
      return "histogram";
  }
}

// Families as text, merged from registered metrics and collector samples before printing.
struct TextFamily {
  std::string help;
  int type = 0;
  std::string samples;
};

class CollectingWriter final : public MetricsWriter {
 public:
  explicit CollectingWriter(std::map<std::string, TextFamily>& out) : out_(out) {}
  void gauge(std::string_view name, std::string_view help, const Labels& labels, double value) override {
    add(name, help, 1, labels, value);
  }
  void counter(std::string_view name, std::string_view help, const Labels& labels, double value) override {
    add(name, help, 0, labels, value);
  }

 private:
  void add(std::string_view name, std::string_view help, int type, const Labels& labels, double value) {
    assert(valid_name(name));
    TextFamily& f = out_[std::string(name)];
    if (f.samples.empty()) {
      f.help = help;
      f.type = type;
    }
    f.samples += std::string(name) + format_labels(labels) + " " + format_value(value) + "\n";
  }
  std::map<std::string, TextFamily>& out_;
};

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), buckets_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
}

void Histogram::observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

std::vector<uint64_t> Histogram::bucket_counts() const {
  std::vector<uint64_t> out(bounds_.size() + 1);
  for (size_t i = 0; i < out.size(); ++i) out[i] = buckets_[i].load(std::memory_order_relaxed);
  return out;
}

std::vector<double> latency_buckets() {
  return {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
          0.05,    0.1,    0.25,    0.5,    1,     2.5,    5,     10};
}

std::vector<double> exponential_buckets(double max) {
  std::vector<double> out;
  for (double b = 1; b <= max; b *= 2) out.push_back(b);
  return out;
}

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string escape_help(std::string_view help) {
  std::string out;
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

MetricsRegistry::Family& MetricsRegistry::family(std::string_view name, std::string_view help, Type type) {
  assert(valid_name(name));
  auto it = families_.find(name);
  if (it == families_.end()) {
    it = families_.emplace(std::string(name), Family{std::string(help), type, {}, {}, {}}).first;
  }
  assert(it->second.type == type);
  return it->second;
}

const Counter* MetricsRegistry::find_counter(std::string_view name) const {
  std::lock_guard lock(mu_);
  auto it = families_.find(name);
  if (it == families_.end()) return nullptr;
  auto c = it->second.counters.find(Labels{});
  return c == it->second.counters.end() ? nullptr : c->second.get();
}

const Gauge* MetricsRegistry::find_gauge(std::string_view name) const {
  std::lock_guard lock(mu_);
  auto it = families_.find(name);
  if (it == families_.end()) return nullptr;
  auto g = it->second.gauges.find(Labels{});
  return g == it->second.gauges.end() ? nullptr : g->second.get();
}

Counter& MetricsRegistry::counter(std::string_view name, std::string_view help, const Labels& labels) {
  std::lock_guard lock(mu_);
  auto& slot = family(name, help, Type::kCounter).counters[labels];
  if (!slot) slot = std::make_unique<Counter>();
  return *slot;
}

Gauge& MetricsRegistry::gauge(std::string_view name, std::string_view help, const Labels& labels) {
  std::lock_guard lock(mu_);
  auto& slot = family(name, help, Type::kGauge).gauges[labels];
  if (!slot) slot = std::make_unique<Gauge>();
  return *slot;
}

Histogram& MetricsRegistry::histogram(std::string_view name, std::string_view help,
                                      std::vector<double> bounds, const Labels& labels) {
  std::lock_guard lock(mu_);
  auto& slot = family(name, help, Type::kHistogram).histograms[labels];
  if (!slot) slot = std::make_unique<Histogram>(std::move(bounds));
  return *slot;
}

void MetricsRegistry::add_collector(Collector collector) {
  std::lock_guard lock(mu_);
  collectors_.push_back(std::move(collector));
}

std::string MetricsRegistry::render() const {
  std::map<std::string, TextFamily> text;
  std::vector<Collector> collectors;
  std::unique_lock lock(mu_);
  collectors = collectors_;
  for (const auto& [name, f] : families_) {
    TextFamily& t = text[name];
    t.help = f.help;
    t.type = static_cast<int>(f.type);
    for (const auto& [labels, c] : f.counters) {
      t.samples += name + format_labels(labels) + " " + format_value(static_cast<double>(c->value())) + "\n";
    }
    for (const auto& [labels, g] : f.gauges) {
      t.samples += name + format_labels(labels) + " " + format_value(static_cast<double>(g->value())) + "\n";
    }
    for (const auto& [labels, h] : f.histograms) {
      const auto counts = h->bucket_counts();
      uint64_t cumulative = 0;
      for (size_t i = 0; i < counts.size(); ++i) {
        cumulative += counts[i];
        const std::pair<std::string, std::string> le{
            "le", i < h->bounds().size() ? format_value(h->bounds()[i]) : std::string("+Inf")};
        t.samples += name + "_bucket" + format_labels(labels, &le) + " " + std::to_string(cumulative) + "\n";
      }
      // _count from the buckets read above, so a scrape racing an observe() stays self-consistent.
      t.samples += name + "_sum" + format_labels(labels) + " " + format_value(h->sum()) + "\n";
      t.samples += name + "_count" + format_labels(labels) + " " + std::to_string(cumulative) + "\n";
    }
  }
  // Collectors may take their own locks (the broker's); never call them under ours.
  lock.unlock();
  CollectingWriter writer(text);
  for (const auto& collect : collectors) collect(writer);

  std::string out;
  for (const auto& [name, t] : text) {
    out += "# HELP " + name + " " + escape_help(t.help) + "\n";
    out += "# TYPE " + name + " " + type_name(t.type) + "\n";
    out += t.samples;
  }
  return out;
}

}  // namespace streamd
