#include "server/broker/pg/pg_placement.h"

namespace streamd::pg_placement {
namespace {

constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;
constexpr uint64_t kFnvPrime = 0x100000001b3ull;

uint64_t fnv1a(uint64_t h, std::string_view bytes) {
  for (const char ch : bytes) {
    h ^= static_cast<unsigned char>(ch);
    h *= kFnvPrime;
  }
  return h;
}

uint64_t splitmix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

uint64_t score(std::string_view shard, std::string_view stream) {
  uint64_t h = fnv1a(kFnvOffset, shard);
  h ^= 0;  // the zero byte between the names
  h *= kFnvPrime;
  return splitmix64(fnv1a(h, stream));
}

size_t shard_of(const std::vector<std::string>& shards, std::string_view stream) {
  size_t best = 0;
  uint64_t best_score = 0;
  for (size_t i = 0; i < shards.size(); ++i) {
    const uint64_t s = score(shards[i], stream);
    if (i == 0 || s > best_score) {
      best = i;
      best_score = s;
    }
  }
  return best;
}

}  // namespace streamd::pg_placement
