// ApiVersions 0-3: the table's rows, so the answer is what the listener implements (the SASL APIs only
// where kafka.sasl_mechanisms is set). v3 is the one flexible version here (compact array, tagged
// fields); its response header stays v0, as Kafka's does.
#include <vector>

#include "server/kafka/api_table.h"
#include "server/kafka/errors.h"
#include "server/kafka/handlers.h"

namespace streamd::kafka {
namespace {

std::string answer(int32_t correlation_id, int16_t version, Error error, bool sasl) {
  std::string frame = start_response(correlation_id);
  Writer w(frame);
  w.i16(code(error));
  std::vector<const ApiInfo*> apis;
  for (const ApiInfo& api : api_table()) {
    if (!api.sasl || sasl) apis.push_back(&api);
  }
  const bool flexible = version >= 3;
  if (flexible) {
    w.compact_array_count(static_cast<int32_t>(apis.size()));
  } else {
    w.array_count(static_cast<int32_t>(apis.size()));
  }
  for (const ApiInfo* info : apis) {
    const ApiInfo& api = *info;
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
  request.responder.send(answer(request.header.correlation_id, request.version(), Error::kNone,
                                !request.services.options.sasl_mechanisms.empty()));
  return true;
}

std::string unsupported_api_versions_answer(int32_t correlation_id, bool sasl) {
  return answer(correlation_id, 0, Error::kUnsupportedVersion, sasl);
}

}  // namespace streamd::kafka
