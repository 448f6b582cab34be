// Writes the seed corpora of the binary fuzz targets, built with the real encoders so the seeds stay
// valid as the formats evolve: `fuzz_make_seeds DIR` writes DIR/native_requests/, DIR/record_batch/
// DIR/segment_recovery/, DIR/kafka_record_batch/ and DIR/kafka_request_header/ (scripts/fuzz --seeds
// fuzz/corpus refreshes the repository's copies).
// The config target's seeds are YAML files kept by hand.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "server/kafka/fetch_batch.h"
#include "server/kafka/record_batch.h"
#include "server/net/frame.h"
#include "server/storage/batch_builder.h"
#include "server/storage/clock.h"
#include "server/storage/partition_log.h"
#include "server/storage/record_batch.h"
#include "server/storage/segment.h"
#include "streamd.pb.h"
#include "tests/support/manual_executor.h"
#include "tests/support/temp_dir.h"

using namespace streamd;

namespace {

void write_seed(const std::filesystem::path& dir, const std::string& name, const std::string& bytes) {
  std::filesystem::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// One connection's bytes: Hello, then `body` requests, each framed, ids from 1.
class Session {
 public:
  Session() {
    v1::Request r;
    r.mutable_hello()->set_protocol_version(kProtocolVersion);
    r.mutable_hello()->set_client_name("seed");
    add(r);
  }
  Session& add(v1::Request r) {
    r.set_id(++id_);
    bytes_ += encode_frame(r);
    return *this;
  }
  const std::string& bytes() const { return bytes_; }

 private:
  uint64_t id_ = 0;
  std::string bytes_;
};

v1::Request create(const std::string& name, int32_t partitions, int64_t max_bytes = 0, int64_t block_ms = 0) {
  v1::Request r;
  auto* c = r.mutable_create_stream();
  c->set_name(name);
  c->mutable_policy()->set_partitions(partitions);
  if (max_bytes > 0) c->mutable_policy()->set_max_record_bytes(max_bytes / 2);
  c->mutable_policy()->set_max_bytes(max_bytes);
  c->mutable_policy()->set_block_timeout_ms(block_ms);
  c->mutable_policy()->set_segment_bytes(4096);
  c->mutable_policy()->set_compact_after_ms(1);
  return r;
}

v1::Request append(const std::string& stream, const std::vector<std::pair<std::string, std::string>>& records) {
  v1::Request r;
  auto* a = r.mutable_append();
  a->set_stream(stream);
  for (const auto& [key, payload] : records) {
    auto* rec = a->add_records();
    rec->set_key(key);
    rec->set_payload(payload);
    auto* h = rec->add_headers();
    h->set_name("h");
    h->set_value("v");
  }
  return r;
}

v1::Request read(const std::string& stream, int32_t partition, uint64_t from, uint32_t wait_ms) {
  v1::Request r;
  auto* rd = r.mutable_read();
  rd->set_stream(stream);
  auto* c = rd->add_cursors();
  c->set_partition(partition);
  c->set_from(from);
  rd->set_max_records(10);
  rd->set_wait_ms(wait_ms);
  return r;
}

void native_requests(const std::filesystem::path& dir) {
  write_seed(dir, "hello", Session().bytes());

  Session every;
  every.add(create("s", 2));
  every.add(append("s", {{"k", "one"}, {"k", "two"}}));
  every.add(append("s", {{"", "unkeyed"}}));
  every.add(read("s", 0, 0, 0));
  every.add(read("s", 1, 0, 0));
  v1::Request r;
  r.mutable_bounds()->set_stream("s");
  every.add(r);
  r.Clear();
  r.mutable_peek()->set_stream("s");
  every.add(r);
  r.Clear();
  r.mutable_commit()->set_stream("s");
  r.mutable_commit()->set_group("g");
  r.mutable_commit()->set_next(1);
  every.add(r);
  r.Clear();
  r.mutable_committed()->set_stream("s");
  r.mutable_committed()->set_group("g");
  every.add(r);
  r.Clear();
  r.mutable_list_groups()->set_stream("s");
  every.add(r);
  r.Clear();
  r.mutable_offset_at()->set_stream("s");
  r.mutable_offset_at()->set_time_us(1);
  every.add(r);
  r.Clear();
  r.mutable_trim()->set_stream("s");
  r.mutable_trim()->set_before(1);
  every.add(r);
  r.Clear();
  r.mutable_compact()->set_stream("s");
  every.add(r);
  r.Clear();
  r.mutable_describe_stream()->set_name("s");
  every.add(r);
  r.Clear();
  r.mutable_list_streams();
  every.add(r);
  r.Clear();
  r.mutable_health();
  every.add(r);
  r.Clear();
  r.mutable_delete_stream()->set_name("s");
  every.add(r);
  write_seed(dir, "every_operation", every.bytes());

  Session poll;
  poll.add(create("w", 1));
  poll.add(read("w", 0, 0, 1000));
  poll.add(append("w", {{"", "wake"}}));
  poll.add(read("w", 0, 1, 50));
  write_seed(dir, "long_poll", poll.bytes());

  Session full;
  full.add(create("f", 1, 2048, 20));
  for (int i = 0; i < 3; ++i) full.add(append("f", {{"k", std::string(900, 'x')}}));
  write_seed(dir, "full_stream", full.bytes());

  Session auto_created;
  auto_created.add(append("auto", {{"a", "1"}, {"b", "2"}}));
  auto_created.add(read("auto", 0, 0, 0));
  write_seed(dir, "auto_create", auto_created.bytes());

  std::string oversized = Session().bytes();
  oversized += std::string("\xff\xff\xff\xff", 4);
  write_seed(dir, "frame_too_large", oversized);
  v1::Request no_hello = append("x", {{"", "y"}});
  no_hello.set_id(1);
  write_seed(dir, "no_hello", encode_frame(no_hello));
}

std::string sealed(uint64_t base, int records) {
  BatchBuilder b;
  for (int i = 0; i < records; ++i) b.add(i % 2 ? "key" : "", "payload-" + std::to_string(base + i), {{"h", "v"}});
  std::string batch = std::move(b).finish();
  seal_batch(batch, Offset(base), Timestamp(1'700'000'000'000'000 + static_cast<int64_t>(base)));
  return batch;
}

void record_batch(const std::filesystem::path& dir) {
  write_seed(dir, "one_batch", "\x01" + sealed(0, 3));
  write_seed(dir, "two_batches", std::string("\x00", 1) + sealed(7, 1) + sealed(8, 4));
  write_seed(dir, "truncated", "\x01" + sealed(0, 2).substr(0, 40));
}

// A partition written by PartitionLog itself: its log and offset index as a crash leaves them.
void segment_recovery(const std::filesystem::path& dir) {
  testing::TempDir scratch;
  const std::string part = scratch.file("p");
  testing::ManualExecutor executor;
  PartitionOptions options;
  options.segment_bytes = 64 << 10;
  options.index_interval_bytes = 128;
  options.preallocate_bytes = 4096;
  {
    auto log = PartitionLog::open(posix_file_system(), part, options, executor, SystemClock::instance());
    if (!log.ok()) {
      std::cerr << log.status().to_string() << "\n";
      std::exit(1);
    }
    for (int i = 0; i < 6; ++i) {
      BatchBuilder b;
      for (int j = 0; j < 3; ++j) b.add(j ? "k" : "", "record-" + std::to_string(i) + "-" + std::to_string(j));
      (*log)->append(std::move(b).finish(), [](Result<AppendRange>) {});
      executor.run_all();
    }
    (*log)->close(PartitionLog::CloseMode::kAsIs);
  }
  std::string log = slurp(part + "/" + Segment::file_stem(Offset(0)) + ".log");
  log.resize(log.find_last_not_of('\0') + 1);  // the records, without the zero-filled room after them
  const std::string index = slurp(part + "/" + Segment::file_stem(Offset(0)) + ".index");
  write_seed(dir, "crashed", "\x01" + log);
  write_seed(dir, "crashed_clean_marker", "\x03" + log);
  std::string with_index = "\x05";
  with_index += static_cast<char>(index.size() & 0xff);
  with_index += static_cast<char>(index.size() >> 8);
  write_seed(dir, "with_index", with_index + index + log);
  std::string two = "\x09";
  const size_t half = sealed(0, 3).size() * 2;
  two += static_cast<char>(half & 0xff);
  two += static_cast<char>(half >> 8);
  write_seed(dir, "two_segments", two + sealed(0, 3) + sealed(3, 3) + sealed(6, 2));
}

// Kafka record sets as the listener's own encoder writes them (a Produce brings the same format).
void kafka_record_batch(const std::filesystem::path& dir) {
  std::vector<std::string> keys = {"", "k1", "k2"};
  std::vector<EntryView> entries;
  for (size_t i = 0; i < keys.size(); ++i) {
    EntryView e;
    e.offset = Offset(i);
    e.appended_at = Timestamp(1'700'000'000'000'000);
    e.key = keys[i];
    e.payload = i == 2 ? std::string_view() : std::string_view("value");
    e.key_null = keys[i].empty();
    e.payload_null = i == 2;
    entries.push_back(e);
  }
  std::string one;
  kafka::encode_fetch_batch(one, kafka::FetchBatch{entries.data(), entries.size(), entries.size(), {}, 0, 2},
                            TimestampType::kCreateTime);
  write_seed(dir, "one_batch", "\x01" + one);
  std::string two = one;
  kafka::encode_fetch_batch(two, kafka::FetchBatch{entries.data(), 1, 1, {}, 3, 3},
                            TimestampType::kCreateTime);
  write_seed(dir, "two_batches", "\x01" + two);
}

// Request frames without their size: api key, version, correlation id, client id (and, for flexible
// versions, an empty tagged-field section), then a few body bytes.
void kafka_request_header(const std::filesystem::path& dir) {
  auto header = [](int16_t key, int16_t version, bool flexible) {
    std::string f;
    auto be16 = [&f](int v) { f += static_cast<char>((v >> 8) & 0xff); f += static_cast<char>(v & 0xff); };
    be16(key);
    be16(version);
    f += std::string("\0\0\0\x07", 4);
    be16(4);
    f += "seed";
    if (flexible) f += '\0';
    return f + std::string(8, '\0');
  };
  write_seed(dir, "api_versions_v3", header(18, 3, true));
  write_seed(dir, "produce_v7", header(0, 7, false));
  write_seed(dir, "fetch_v11", header(1, 11, false));
  write_seed(dir, "unknown_api", header(999, 0, false));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_make_seeds DIR\n";
    return 2;
  }
  const std::filesystem::path root(argv[1]);
  native_requests(root / "native_requests");
  record_batch(root / "record_batch");
  segment_recovery(root / "segment_recovery");
  kafka_record_batch(root / "kafka_record_batch");
  kafka_request_header(root / "kafka_request_header");
  return 0;
}
