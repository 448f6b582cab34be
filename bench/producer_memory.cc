// producer_memory: what an idempotent producer's state costs a partition in memory
// (docs/SEMANTICS.md §11, limits.max_producers): the heap a ProducerState holds for N producers, each
// with its last five batches, measured with mallinfo2 before and after, per producer. Prints one line
// per N.
//
//   producer_memory [N ...]   (default: 1000 10000 100000)
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "server/storage/producer_state.h"

namespace {

size_t heap_in_use() { return mallinfo2().uordblks; }

}  // namespace

int main(int argc, char** argv) {
  std::vector<long> counts;
  for (int i = 1; i < argc; ++i) counts.push_back(std::strtol(argv[i], nullptr, 10));
  if (counts.empty()) counts = {1000, 10000, 100000};
  for (long n : counts) {
    const size_t before = heap_in_use();
    auto state = std::make_unique<streamd::ProducerState>();
    uint64_t offset = 0;
    for (long id = 0; id < n; ++id) {
      for (int32_t b = 0; b < 5; ++b) {
        const streamd::ProducerStamp stamp{id, 0, b * 10};
        state->stage(stamp, 9, {streamd::Offset(offset), streamd::Offset(offset + 9)}, streamd::Timestamp(1));
        offset += 10;
      }
      state->settle(SIZE_MAX, streamd::Timestamp(1));
    }
    const size_t after = heap_in_use();
    std::printf("producer_memory: %ld producers of one partition, each with 5 batches: %zu bytes, %.0f bytes per producer\n",
                n, after - before, static_cast<double>(after - before) / static_cast<double>(n));
  }
  return 0;
}
