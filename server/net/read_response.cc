#include "server/net/read_response.h"

#include "server/net/frame.h"
#include "server/net/wire_convert.h"
#include "streamd.pb.h"

namespace streamd {

std::string encode_read_frame(uint64_t request_id, const std::vector<PartitionRead>& reads,
                              ReadStats* stats) {
  v1::Response response;
  response.set_id(request_id);
  auto* body = response.mutable_read();
  for (const PartitionRead& p : reads) {
    auto* wp = body->add_partitions();
    wp->set_partition(p.partition.value);
    if (!p.status.ok()) {
      error_to_wire(p.status, wp->mutable_error());
      continue;
    }
    wp->set_next_from(p.result.next_from.value);
    for (const EntryView& e : p.result.entries) {
      entry_to_wire(p.partition, e, wp->add_entries());
      stats->records += 1;
      stats->bytes += record_size(e.key, e.payload, e.headers);
    }
  }
  return encode_frame(response);
}

}  // namespace streamd
