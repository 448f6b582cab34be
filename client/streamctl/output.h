// How streamctl shows the client's values: the JSON shapes of docs/SEMANTICS.md §8 (--json) and aligned text
// tables for people. Pure formatting; no I/O beyond the stream it is handed. Not thread-safe.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "client/error.h"
#include "client/streamctl/json_writer.h"
#include "client/types.h"

namespace streamd::streamctl {

void write_policy(JsonWriter& w, const client::Policy& policy);
// Kafka's spelling of a timestamp type: "CreateTime" (also for the zero value) or "LogAppendTime".
const char* timestamp_type_name(client::TimestampType type);
// {"partition","offset","appended_at","key","payload","key_b64","payload_b64","headers"}: key and
// payload as text when valid UTF-8, else null; headers as [{"name","value","value_b64"}].
void write_entry(JsonWriter& w, const client::Entry& entry);
// {"error":{"code","name","message","fields"}}
std::string error_json(const client::Error& error);

// Columns padded to their widest cell; numbers are right-aligned by the caller's choice of column.
class Table {
 public:
  explicit Table(std::vector<std::string> headers, std::vector<bool> right_aligned = {});
  void add(std::vector<std::string> row);
  void print(std::ostream& out) const;

 private:
  std::vector<std::string> headers_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace streamd::streamctl
