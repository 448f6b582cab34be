// libpq's view of a statement's parameters (PgParams, pg_connection.h): pointers, lengths and formats,
// all binary. Internal to PgConnection's files.
#pragma once

#include <string_view>
#include <vector>

namespace streamd {

struct PgMarshalled {
  explicit PgMarshalled(const std::vector<std::string_view>& v)
      : values(v.size()), lengths(v.size()), formats(v.size(), 1) {
    for (size_t i = 0; i < v.size(); ++i) {
      values[i] = v[i].data();
      lengths[i] = static_cast<int>(v[i].size());
    }
  }
  std::vector<const char*> values;
  std::vector<int> lengths;
  std::vector<int> formats;
};

}  // namespace streamd
