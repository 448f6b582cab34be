#include "server/kafka/request_header.h"

#include <algorithm>

#include "server/kafka/codec.h"

namespace streamd::kafka {

ParsedHeader parse_request(std::string_view frame) {
  ParsedHeader out;
  Reader r(frame);
  out.header.api_key = r.i16();
  out.header.api_version = r.i16();
  out.header.correlation_id = r.i32();
  if (r.failed()) return out;
  out.api = find_api(out.header.api_key);
  if (out.api == nullptr) {
    out.status = HeaderStatus::kUnknownApi;
    return out;
  }
  if (!out.api->supports(out.header.api_version)) {
    out.status = HeaderStatus::kUnsupportedVersion;
    return out;
  }
  // The client id stays a plain nullable string even in header v2.
  auto client_id = r.nullable_string();
  if (out.api->flexible(out.header.api_version)) r.skip_tagged_fields();
  if (r.failed()) {
    out.status = HeaderStatus::kMalformed;
    return out;
  }
  if (client_id) out.header.client_id = std::string(*client_id);
  out.body = frame.substr(frame.size() - r.remaining());
  out.status = HeaderStatus::kOk;
  return out;
}

std::string start_response(int32_t correlation_id, bool header_v1) {
  std::string frame;
  Writer w(frame);
  w.i32(0);
  w.i32(correlation_id);
  if (header_v1) w.empty_tagged_fields();
  return frame;
}

void finish_response(std::string& frame, size_t total) {
  put_be32(frame.data(), static_cast<uint32_t>(std::max(total, frame.size()) - 4));
}

}  // namespace streamd::kafka
