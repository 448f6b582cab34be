#include "server/broker/pg/pg_change_feed.h"

#include <charconv>

namespace streamd::pg_changes {
namespace {

constexpr size_t kHeadFields = 11;

// "h" and eleven integers separated by dots; the last, first_open, is -1 for none.
bool parse_head(std::string_view item, HeadChange& out) {
  if (item.empty() || item[0] != 'h') return false;
  int64_t v[kHeadFields];
  const char* p = item.data() + 1;
  const char* end = item.data() + item.size();
  for (size_t i = 0; i < kHeadFields; ++i) {
    auto [next, ec] = std::from_chars(p, end, v[i]);
    if (ec != std::errc()) return false;
    p = next;
    if (i + 1 < kHeadFields) {
      if (p == end || *p != '.') return false;
      ++p;
    }
  }
  if (p != end || v[1] < 0 || v[2] < 0 || v[3] < v[2] || v[4] < 0) return false;
  out.stream_id = v[0];
  out.part = static_cast<int32_t>(v[1]);
  out.head.first = Offset(static_cast<uint64_t>(v[2]));
  out.head.next = Offset(static_cast<uint64_t>(v[3]));
  out.head.bytes = static_cast<uint64_t>(v[4]);
  out.head.last_at = Timestamp{v[5]};
  out.head.active_base = Offset(static_cast<uint64_t>(v[6]));
  out.head.active_bytes = static_cast<uint64_t>(v[7]);
  out.head.active_min_at = Timestamp{v[8]};
  out.head.segments = static_cast<uint32_t>(v[9]);
  if (v[10] >= 0) out.head.first_open = Offset(static_cast<uint64_t>(v[10]));
  return true;
}

}  // namespace

std::string head_item(int64_t stream_id, int32_t part, const PgHead& h) {
  std::string out = "h";
  for (int64_t v : {stream_id, int64_t{part}, static_cast<int64_t>(h.first.value), static_cast<int64_t>(h.next.value),
                    static_cast<int64_t>(h.bytes), h.last_at.micros, static_cast<int64_t>(h.active_base.value),
                    static_cast<int64_t>(h.active_bytes), h.active_min_at.micros, int64_t{h.segments},
                    h.first_open ? static_cast<int64_t>(h.first_open->value) : int64_t{-1}}) {
    if (out.size() > 1) out += '.';
    out += std::to_string(v);
  }
  return out;
}

std::string payload(const std::string& tag, const std::vector<std::string>& items) {
  std::string out = tag + "|";
  const size_t bare = out.size();
  for (const std::string& item : items) {
    if (out.size() + item.size() + 1 > kMaxPayload) return tag + "|r";
    if (out.size() > bare) out += ' ';
    out += item;
  }
  return out;
}

void decode(std::string_view text, Decoded& out) {
  const size_t bar = text.find('|');
  if (bar == std::string_view::npos) {
    out.refresh = true;
    return;
  }
  std::string_view rest = text.substr(bar + 1);
  while (!rest.empty()) {
    const size_t space = rest.find(' ');
    const std::string_view item = rest.substr(0, space);
    rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
    if (item.empty()) continue;
    HeadChange change;
    if (item == "r") {
      out.refresh = true;
    } else if (item == "j") {
      out.joined = true;
      out.refresh = true;
    } else if (parse_head(item, change)) {
      out.heads.push_back(change);
    } else {
      out.refresh = true;
    }
  }
}

}  // namespace streamd::pg_changes
