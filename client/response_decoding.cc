#include "client/response_decoding.h"

#include <algorithm>

#include "client/wire_reader.h"

namespace streamd::client {
namespace {

constexpr uint32_t kVarint = 0;
constexpr uint32_t kLengthDelimited = 2;

// int32 fields are varints of the value sign-extended to 64 bits.
int32_t as_int32(uint64_t v) {
  return static_cast<int32_t>(static_cast<uint32_t>(v));
}

bool decode_header(std::string_view bytes, Header* out) {
  WireReader r(bytes);
  uint32_t field, type;
  while (!r.done()) {
    if (!r.next_field(&field, &type)) return false;
    std::string_view value;
    if ((field == 1 || field == 2) && type == kLengthDelimited) {
      if (!r.length_delimited(&value)) return false;
      (field == 1 ? out->name : out->value).assign(value);
    } else if (!r.skip(type)) {
      return false;
    }
  }
  return true;
}

bool decode_record(std::string_view bytes, Record* out) {
  WireReader r(bytes);
  uint32_t field, type;
  while (!r.done()) {
    if (!r.next_field(&field, &type)) return false;
    std::string_view value;
    if (field >= 1 && field <= 3 && type == kLengthDelimited) {
      if (!r.length_delimited(&value)) return false;
      if (field == 1) {
        out->key.assign(value);
      } else if (field == 2) {
        out->payload.assign(value);
      } else if (!decode_header(value, &out->headers.emplace_back())) {
        return false;
      }
    } else if (!r.skip(type)) {
      return false;
    }
  }
  return true;
}

bool decode_entry(std::string_view bytes, Entry* out) {
  WireReader r(bytes);
  uint32_t field, type;
  while (!r.done()) {
    if (!r.next_field(&field, &type)) return false;
    uint64_t v;
    std::string_view value;
    if (field >= 1 && field <= 3 && type == kVarint) {
      if (!r.varint(&v)) return false;
      if (field == 1) out->partition = as_int32(v);
      if (field == 2) out->offset = v;
      if (field == 3) out->appended_at_us = static_cast<int64_t>(v);
    } else if (field == 4 && type == kLengthDelimited) {
      if (!r.length_delimited(&value) || !decode_record(value, &out->record)) return false;
    } else if (!r.skip(type)) {
      return false;
    }
  }
  return true;
}

bool decode_partition_read(std::string_view bytes, ReadAnswer* out) {
  WireReader r(bytes);
  uint32_t field, type;
  int32_t partition = 0;
  uint64_t next_from = 0;
  std::optional<Error> error;
  const size_t first_entry = out->entries.size();
  // Counting the entries first (a walk over their tags and lengths) lets the list grow once.
  size_t count = 0;
  for (WireReader counter(bytes); !counter.done();) {
    if (!counter.next_field(&field, &type)) return false;
    if (field == 2) ++count;
    if (!counter.skip(type)) return false;
  }
  out->entries.reserve(first_entry + count);
  while (!r.done()) {
    if (!r.next_field(&field, &type)) return false;
    uint64_t v;
    std::string_view value;
    if ((field == 1 || field == 3) && type == kVarint) {
      if (!r.varint(&v)) return false;
      if (field == 1) partition = as_int32(v);
      if (field == 3) next_from = v;
    } else if ((field == 2 || field == 4) && type == kLengthDelimited) {
      if (!r.length_delimited(&value)) return false;
      if (field == 2) {
        if (!decode_entry(value, &out->entries.emplace_back())) return false;
      } else {
        error = decode_error(value);
        if (!error) return false;
      }
    } else if (!r.skip(type)) {
      return false;
    }
  }
  if (error && error->code() != 0) {
    if (!out->error) out->error = error->with("partition", std::to_string(partition));
  }
  if (out->entries.size() > first_entry) next_from = std::max(next_from, out->entries.back().offset + 1);
  out->next.emplace_back(partition, next_from);
  return true;
}

}  // namespace

bool scan_response(std::string_view frame_body, ResponseView* out) {
  WireReader r(frame_body);
  uint32_t field, type;
  while (!r.done()) {
    if (!r.next_field(&field, &type)) return false;
    if (field == 1 && type == kVarint) {
      if (!r.varint(&out->id)) return false;
    } else if (field == 2 && type == kLengthDelimited) {
      if (!r.length_delimited(&out->error)) return false;
    } else if (field >= 10 && type == kLengthDelimited) {
      out->body_field = field;
      if (!r.length_delimited(&out->body)) return false;
    } else if (!r.skip(type)) {
      return false;
    }
  }
  return true;
}

std::optional<Error> decode_error(std::string_view bytes) {
  WireReader r(bytes);
  uint32_t field, type;
  uint64_t code = 0;
  std::string name, message;
  Fields fields;
  while (!r.done()) {
    if (!r.next_field(&field, &type)) return std::nullopt;
    std::string_view value;
    if (field == 1 && type == kVarint) {
      if (!r.varint(&code)) return std::nullopt;
    } else if (field >= 2 && field <= 4 && type == kLengthDelimited) {
      if (!r.length_delimited(&value)) return std::nullopt;
      if (field == 2) name.assign(value);
      if (field == 3) message.assign(value);
      if (field == 4) {  // a map entry: {1: key, 2: value}
        WireReader entry(value);
        std::string key, text;
        while (!entry.done()) {
          std::string_view part;
          if (!entry.next_field(&field, &type)) return std::nullopt;
          if ((field == 1 || field == 2) && type == kLengthDelimited) {
            if (!entry.length_delimited(&part)) return std::nullopt;
            (field == 1 ? key : text).assign(part);
          } else if (!entry.skip(type)) {
            return std::nullopt;
          }
        }
        fields[key] = text;
      }
    } else if (!r.skip(type)) {
      return std::nullopt;
    }
  }
  const auto code32 = static_cast<uint32_t>(code);
  if (name.empty()) {
    if (const ErrorInfo* info = error_info(code32); info != nullptr) name = std::string(info->name);
  }
  return Error(code32, std::move(name), std::move(message), std::move(fields));
}

bool decode_read_response(std::string_view bytes, ReadAnswer* out) {
  WireReader r(bytes);
  uint32_t field, type;
  while (!r.done()) {
    if (!r.next_field(&field, &type)) return false;
    std::string_view value;
    if (field == 1 && type == kLengthDelimited) {
      if (!r.length_delimited(&value) || !decode_partition_read(value, out)) return false;
    } else if (!r.skip(type)) {
      return false;
    }
  }
  return true;
}

}  // namespace streamd::client
