#include "client/streamctl/duration_flag.h"

#include "client/duration.h"

namespace streamd::streamctl {

using client::Error;
using client::ErrorCode;
using client::Result;

Result<std::chrono::milliseconds> duration_flag(const std::string& text, const char* field) {
  auto d = client::parse_duration(text);
  if (!d.ok()) {
    return Error(ErrorCode::kStreamMisconfigured, d.error().message(), {{"field", field}, {"value", text}});
  }
  return *d;
}

}  // namespace streamd::streamctl
