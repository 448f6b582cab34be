#include "client/streamctl/output.h"

#include <algorithm>

#include "client/streamctl/text_encoding.h"
#include "client/streamctl/timestamp.h"

namespace streamd::streamctl {

void write_policy(JsonWriter& w, const client::Policy& p) {
  w.begin_object()
      .field("partitions", p.partitions)
      .field("max_record_bytes", p.max_record_bytes)
      .field("retain_for_ms", static_cast<int64_t>(p.retain_for.count()))
      .field("retain_bytes", p.retain_bytes)
      .field("max_bytes", p.max_bytes)
      .field("block_timeout_ms", static_cast<int64_t>(p.block_timeout.count()))
      .field("segment_bytes", p.segment_bytes)
      .field("compact_after_ms", static_cast<int64_t>(p.compact_after.count()))
      .field("timestamp_type", timestamp_type_name(p.timestamp_type))
      .end_object();
}

const char* timestamp_type_name(client::TimestampType type) {
  return type == client::TimestampType::kLogAppendTime ? "LogAppendTime" : "CreateTime";
}

namespace {

void text_or_null(JsonWriter& w, std::string_view name, const std::string& bytes) {
  w.key(name);
  if (is_valid_utf8(bytes)) {
    w.string(bytes);
  } else {
    w.null();
  }
}

}  // namespace

void write_entry(JsonWriter& w, const client::Entry& e) {
  w.begin_object()
      .field("partition", e.partition)
      .field("offset", e.offset)
      .field("appended_at", format_rfc3339_us(e.appended_at_us));
  text_or_null(w, "key", e.record.key);
  text_or_null(w, "payload", e.record.payload);
  w.field("key_b64", base64_encode(e.record.key)).field("payload_b64", base64_encode(e.record.payload));
  w.key("headers").begin_array();
  for (const client::Header& h : e.record.headers) {
    w.begin_object().field("name", h.name);
    text_or_null(w, "value", h.value);
    w.field("value_b64", base64_encode(h.value)).end_object();
  }
  w.end_array().end_object();
}

std::string error_json(const client::Error& error) {
  JsonWriter w;
  w.begin_object().key("error").begin_object();
  w.field("code", error.code()).field("name", error.name()).field("message", error.message());
  w.key("fields").begin_object();
  for (const auto& [k, v] : error.fields()) w.field(k, v);
  w.end_object().end_object().end_object();
  return w.take();
}

Table::Table(std::vector<std::string> headers, std::vector<bool> right_aligned)
    : headers_(std::move(headers)), right_(std::move(right_aligned)) {
  right_.resize(headers_.size(), false);
}

void Table::add(std::vector<std::string> row) {
  row.resize(headers_.size());
  rows_.push_back(std::move(row));
}

void Table::print(std::ostream& out) const {
  std::vector<size_t> width(headers_.size());
  for (size_t c = 0; c < headers_.size(); ++c) {
    width[c] = headers_[c].size();
    for (const auto& row : rows_) width[c] = std::max(width[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (size_t c = 0; c < cells.size(); ++c) {
      const size_t pad = width[c] - cells[c].size();
      const bool last = c + 1 == cells.size();
      if (right_[c]) text.append(pad, ' ');
      text += cells[c];
      if (!right_[c] && !last) text.append(pad, ' ');
      if (!last) text += "  ";
    }
    out << text << '\n';
  };
  line(headers_);
  for (const auto& row : rows_) line(row);
}

}  // namespace streamd::streamctl
