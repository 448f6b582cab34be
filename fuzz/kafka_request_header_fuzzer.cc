// The Kafka listener's request header parser (server/kafka/request_header.h) over hostile frames:
// parse_request classifies any frame without reading past it, and a frame it accepts names an api in
// the table with a version inside that api's range, and a body that is the frame's tail.
#include <cstdlib>
#include <string>
#include <vector>

#include "server/kafka/api_table.h"
#include "server/kafka/request_header.h"

using namespace streamd;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<char> frame(data, data + size);  // exactly the input: ASan sees a read past it
  const std::string_view view(frame.data(), frame.size());
  const kafka::ParsedHeader parsed = kafka::parse_request(view);
  if (parsed.status != kafka::HeaderStatus::kOk) return 0;
  if (parsed.api == nullptr || !parsed.api->supports(parsed.header.api_version)) std::abort();
  if (parsed.body.data() < view.data() || parsed.body.data() + parsed.body.size() != view.data() + view.size())
    std::abort();
  return 0;
}
