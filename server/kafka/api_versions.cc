// ApiVersions 0-3: the table's rows, so the answer is what the listener implements. v3 is the one
// flexible version here (compact array, tagged fields); its response header stays v0, as Kafka's does.
#include "server/kafka/api_table.h"
#include "server/kafka/errors.h"
#include "server/kafka/handlers.h"

namespace streamd::kafka {
namespace {

std::string answer(int32_t correlation_id, int16_t version, Error error) {
  std::string frame = start_response(correlation_id);
  Writer w(frame);
  w.i16(code(error));
  const auto apis = api_table();
  const bool flexible = version >= 3;
  if (flexible) {
    w.compact_array_count(static_cast<int32_t>(apis.size()));
  } else {
    w.array_count(static_cast<int32_t>(apis.size()));
  }
  for (const ApiInfo& api : apis) {
    w.i16(static_cast<int16_t>(api.key));
    w.i16(api.min_version);
    w.i16(api.max_version);
    if (flexible) w.empty_tagged_fields();
  }
  if (version >= 1) w.i32(0);  // throttle time
  if (flexible) w.empty_tagged_fields();
  return frame;
}

}  // namespace

bool handle_api_versions(Request& request) {
  if (request.version() >= 3) {
    request.body.compact_string();  // client software name
    request.body.compact_string();  // and version
    request.body.skip_tagged_fields();
  }
  if (request.body.failed()) return false;
  request.responder.send(answer(request.header.correlation_id, request.version(), Error::kNone));
  return true;
}

std::string unsupported_api_versions_answer(int32_t correlation_id) {
  return answer(correlation_id, 0, Error::kUnsupportedVersion);
}

}  // namespace streamd::kafka
