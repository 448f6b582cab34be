#include "tests/crash/resends.h"

#include <algorithm>

#include "tests/crash/requests.h"
#include "tests/integration/wire_client.h"

namespace streamd::crash {

ResendCounts resend(Ledger& ledger, uint16_t port) {
  std::vector<Resend> resends;
  {
    std::lock_guard lock(ledger.mutex());
    resends.swap(ledger.resends());
  }
  // A producer's batches on a partition go again in the order they were sent (ids rise with it).
  std::sort(resends.begin(), resends.end(), [](const Resend& a, const Resend& b) {
    return std::make_pair(a.batch.stamp.producer_id, a.batch.id) < std::make_pair(b.batch.stamp.producer_id, b.batch.id);
  });
  ResendCounts counts;
  testing::WireClient client(port);
  for (const Resend& r : resends) {
    const Batch& b = r.batch;
    const std::string what = "batch " + std::to_string(b.id) + " of producer " + std::to_string(b.stamp.producer_id) +
                             " (sequence " + std::to_string(b.stamp.sequence) + ") resent to " + b.stream + "/" +
                             std::to_string(b.stamp.partition);
    ledger.resend_begun(b);
    v1::Response answer = client.call(append_of(b));
    if (!answer.has_append()) {
      ledger.refused(b.id, testing::error_name(answer));
      ledger.fail(what + ": refused " + testing::error_name(answer) +
                  (r.found ? ", though the broker kept it" : ", though the broker lost it"));
      continue;
    }
    const auto& a = answer.append();
    ledger.acknowledged(b.id, a.partition(), a.first(), a.last());
    if (!r.found) {
      ++counts.written;
    } else if (std::make_pair(a.partition(), a.first()) == *r.found) {
      ++counts.recognised;
    } else {
      ledger.fail(what + ": written again at " + std::to_string(a.partition()) + "/" + std::to_string(a.first()) +
                  ", though the broker kept it at " + std::to_string(r.found->first) + "/" +
                  std::to_string(r.found->second) + " (a duplicate)");
    }
  }
  return counts;
}

}  // namespace streamd::crash
