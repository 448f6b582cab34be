#include "server/logging.h"

#include <spdlog/details/file_helper.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <ctime>
#include <memory>
#include <mutex>

namespace streamd {
namespace {

// A file sink that can be reopened by name: after logrotate renames the file, SIGHUP makes the next
// line go to a fresh file at the configured path.
class ReopenableFileSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit ReopenableFileSink(const std::string& path) { file_.open(path, false); }
  void reopen() {
    std::lock_guard lock(mutex_);
    file_.reopen(false);
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    file_.write(line);
  }
  void flush_() override { file_.flush(); }

 private:
  spdlog::details::file_helper file_;
};

void append_json_string(spdlog::memory_buf_t& out, std::string_view text) {
  out.push_back('"');
  for (const char c : text) {
    switch (c) {
      case '"':
        out.append(std::string_view("\\\""));
        break;
      case '\\':
        out.append(std::string_view("\\\\"));
        break;
      case '\n':
        out.append(std::string_view("\\n"));
        break;
      case '\r':
        out.append(std::string_view("\\r"));
        break;
      case '\t':
        out.append(std::string_view("\\t"));
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
          out.append(std::string_view(escaped));
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

// {"time":"2026-01-02T03:04:05.678901Z","level":"info","message":"…"}: one object per line, UTC.
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const auto since = msg.time.time_since_epoch();
    const auto secs = std::chrono::duration_cast<std::chrono::seconds>(since);
    const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(since - secs).count();
    const std::time_t t = static_cast<std::time_t>(secs.count());
    std::tm tm{};
    gmtime_r(&t, &tm);
    char stamp[80];
    std::snprintf(stamp, sizeof stamp, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long>(micros));
    dest.append(std::string_view("{\"time\":\""));
    dest.append(std::string_view(stamp));
    dest.append(std::string_view("\",\"level\":"));
    const auto level = spdlog::level::to_string_view(msg.level);
    append_json_string(dest, std::string_view(level.data(), level.size()));
    dest.append(std::string_view(",\"message\":"));
    append_json_string(dest, std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(std::string_view("}\n"));
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<JsonFormatter>(); }
};

std::mutex reopen_mu;
std::shared_ptr<ReopenableFileSink> file_sink;

}  // namespace

std::optional<std::string> setup_logging(const Config& config) {
  spdlog::sink_ptr sink;
  if (config.log_file.empty()) {
    sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  } else {
    try {
      auto file = std::make_shared<ReopenableFileSink>(config.log_file);
      std::lock_guard lock(reopen_mu);
      file_sink = file;
      sink = file;
    } catch (const spdlog::spdlog_ex& e) {
      return "cannot open log_file " + config.log_file + ": " + e.what();
    }
  }
  if (config.log_format == LogFormat::kJson) {
    sink->set_formatter(std::make_unique<JsonFormatter>());
  } else {
    sink->set_formatter(std::make_unique<spdlog::pattern_formatter>("%Y-%m-%dT%H:%M:%S.%fZ %l %v",
                                                                    spdlog::pattern_time_type::utc));
  }
  auto logger = std::make_shared<spdlog::logger>("streamd", sink);
  logger->set_level(spdlog::level::from_str(config.log_level));
  // Lines are rare (never one per record), so each reaches the file at once.
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
  return std::nullopt;
}

bool reopen_log_file() {
  std::shared_ptr<ReopenableFileSink> sink;
  {
    std::lock_guard lock(reopen_mu);
    sink = file_sink;
  }
  if (!sink) return false;
  try {
    sink->reopen();
  } catch (const spdlog::spdlog_ex&) {
    return false;
  }
  return true;
}

}  // namespace streamd
