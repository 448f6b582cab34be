#include "server/kafka/record_batch.h"

#include "server/kafka/codec.h"
#include "server/kafka/compression.h"
#include "server/storage/batch_builder.h"
#include "server/storage/crc32c.h"

namespace streamd::kafka {
namespace {

using namespace batch_v2;

DecodeResult refuse(Error e, std::string reason) {
  return DecodeResult{e, std::move(reason)};
}

// One record of a batch's (inflated) record section. `storable` turns false when the record is valid
// Kafka but not as a stored batch keeps it (attributes other than 0, an offset delta not its index).
bool decode_record(Reader& r, int64_t base_timestamp, int32_t index, KafkaRecord& rec, bool& storable) {
  const int32_t length = r.varint();
  if (r.failed() || length < 0 || static_cast<size_t>(length) > r.remaining()) return false;
  Reader body(r.raw(static_cast<size_t>(length)));
  if (body.i8() != 0) storable = false;  // attributes: unused in v2
  // Wrapping, as Kafka's clients add them (and the stored batch's reader does).
  rec.timestamp =
      static_cast<int64_t>(static_cast<uint64_t>(base_timestamp) + static_cast<uint64_t>(body.varlong()));
  if (body.varint() != index) storable = false;  // offset delta: the broker assigns offsets
  const int32_t key_length = body.varint();
  if (key_length >= 0) {
    rec.key = body.raw(static_cast<size_t>(key_length));
  } else if (key_length != -1) {
    return false;
  }
  const int32_t value_length = body.varint();
  if (value_length >= 0) {
    rec.value = body.raw(static_cast<size_t>(value_length));
  } else if (value_length != -1) {
    return false;
  }
  const int32_t headers = body.varint();
  if (headers < 0 || static_cast<size_t>(headers) > body.remaining()) return false;
  rec.headers.reserve(static_cast<size_t>(headers));
  for (int32_t i = 0; i < headers && !body.failed(); ++i) {
    HeaderView h;
    const int32_t name_length = body.varint();
    if (name_length < 0) return false;
    h.name = body.raw(static_cast<size_t>(name_length));
    const int32_t header_value_length = body.varint();
    if (header_value_length >= 0) {
      h.value = body.raw(static_cast<size_t>(header_value_length));
    } else if (header_value_length == -1) {
      h.value_null = true;
    } else {
      return false;
    }
    rec.headers.push_back(h);
  }
  return !body.failed() && body.at_end();
}

// Kafka's producer fields as a stored batch keeps them (docs/FORMAT.md §Validity): none at all without a
// producer id (some clients send epoch 0 and sequence 0 then); nullopt when they cannot go together.
std::optional<ProducerFields> producer_fields(int64_t id, int16_t epoch, int32_t base_sequence) {
  if (id == -1) return ProducerFields{};
  if (id < -1 || epoch < 0 || base_sequence < -1) return std::nullopt;
  return ProducerFields{id, epoch, base_sequence};
}

}  // namespace

DecodeResult decode_record_set(std::string_view records, size_t max_inflated, std::vector<KafkaRecord>& out,
                               std::deque<std::string>& arena, std::vector<KafkaBatch>* batches, bool transactional) {
  const size_t out_start = out.size();
  const size_t arena_start = arena.size();
  const size_t batches_start = batches != nullptr ? batches->size() : 0;
  size_t inflated = 0;
  auto fail = [&](Error e, std::string reason) {
    out.resize(out_start);
    arena.resize(arena_start);
    if (batches != nullptr) batches->resize(batches_start);
    return refuse(e, std::move(reason));
  };
  if (records.empty()) return fail(Error::kCorruptMessage, "the record set is empty");
  Reader set(records);
  while (!set.at_end()) {
    if (set.remaining() < kLogOverhead + 5) return fail(Error::kCorruptMessage, "a batch is truncated");
    const char* start = records.data() + (records.size() - set.remaining());
    set.i64();  // base offset: assigned by the broker
    const int32_t length = set.i32();
    if (length < 0 || static_cast<size_t>(length) > set.remaining()) {
      return fail(Error::kCorruptMessage, "a batch's length runs past the record set");
    }
    std::string_view batch(start, kLogOverhead + static_cast<size_t>(length));
    set.raw(static_cast<size_t>(length));
    if (batch.size() <= kMagic) return fail(Error::kCorruptMessage, "a batch is shorter than its header");
    const auto magic = static_cast<int8_t>(batch[kMagic]);
    if (magic != 2) {
      return fail(Error::kUnsupportedForMessageFormat,
                  "message format v" + std::to_string(magic) + " is not supported; only v2 batches are");
    }
    if (batch.size() < kHeaderSize) return fail(Error::kCorruptMessage, "a batch is shorter than its header");
    const uint32_t crc = get_be32(batch.data() + kCrc);
    if (crc32c(batch.substr(kAttributes)) != crc) return fail(Error::kCorruptMessage, "a batch's CRC does not match");
    Reader header(batch.substr(kAttributes));
    const int16_t attributes = header.i16();
    if ((attributes & kControl) != 0) return fail(Error::kInvalidRecord, "control batches are not accepted");
    if (((attributes & kTransactional) != 0) != transactional) {
      return fail(Error::kInvalidRecord,
                  transactional ? "a request with a transactional id holds a batch that is not transactional"
                                : "a transactional batch needs the request's transactional id");
    }
    header.i32();  // last offset delta: the records' own deltas are checked instead
    KafkaBatch info;
    info.base_timestamp = header.i64();
    header.i64();  // max timestamp: computed from the records below
    const int64_t producer_id = header.i64();
    const int16_t producer_epoch = header.i16();
    const int32_t base_sequence = header.i32();
    const int32_t count = header.i32();
    if (count < 0) return fail(Error::kCorruptMessage, "a batch's record count is negative");
    const std::optional<ProducerFields> producer =
        producer_fields(producer_id, producer_epoch, base_sequence);
    if (!producer)
      return fail(Error::kCorruptMessage, "a batch's producer id, epoch and sequence do not go together");
    info.producer = *producer;
    info.transactional = transactional;
    if (transactional && producer->id < 0) {
      return fail(Error::kInvalidRecord, "a transactional batch without a producer id");
    }
    std::string_view body = batch.substr(kHeaderSize);
    const auto codec = static_cast<Compression>(attributes & kCompressionMask);
    if (codec != Compression::kNone) {
      std::string& inflated_bytes = arena.emplace_back();
      std::string reason;
      if (!decompress(codec, body, max_inflated - inflated, inflated_bytes, reason)) {
        return fail(Error::kCorruptMessage, std::string(compression_name(codec)) + " record set: " + reason);
      }
      inflated += inflated_bytes.size();
      body = inflated_bytes;
    }
    info.records = body;
    info.first = out.size();
    info.count = static_cast<size_t>(count);
    Reader r(body);
    for (int32_t i = 0; i < count; ++i) {
      if (r.at_end()) return fail(Error::kCorruptMessage, "a batch holds fewer records than its count");
      KafkaRecord& rec = out.emplace_back();
      if (!decode_record(r, info.base_timestamp, i, rec, info.storable)) {
        return fail(Error::kCorruptMessage, "a record does not parse");
      }
      if (i == 0 || rec.timestamp > info.max_timestamp) info.max_timestamp = rec.timestamp;
    }
    if (!r.at_end()) return fail(Error::kCorruptMessage, "a batch holds more records than its count");
    if (batches != nullptr) batches->push_back(info);
  }
  return DecodeResult{};
}

std::string storage_batch(const std::vector<KafkaRecord>& records, const std::vector<KafkaBatch>& batches) {
  BatchOptions options;
  options.create_times = true;
  if (!batches.empty()) {
    options.producer = batches.front().producer;
    options.transactional = batches.front().transactional;
  }
  if (batches.size() == 1 && batches.front().storable && batches.front().count > 0) {
    const KafkaBatch& b = batches.front();
    // The producer's record region goes into the log as it came: no record is decoded into another form
    // or encoded again (docs/FORMAT.md §"Why the record region is Kafka's").
    return BatchBuilder::wrap(
        options, EncodedRecords{b.records, static_cast<uint32_t>(b.count), static_cast<uint32_t>(b.count - 1),
                                b.base_timestamp, b.max_timestamp});
  }
  BatchBuilder builder(options);
  RecordView view;
  for (const KafkaRecord& r : records) {
    view.key_null = !r.key;
    view.key = r.key.value_or(std::string_view());
    view.payload_null = !r.value;
    view.payload = r.value.value_or(std::string_view());
    view.headers = r.headers;
    view.create_time = CreateTime(r.timestamp);
    builder.add(view);
  }
  return std::move(builder).finish();
}

}  // namespace streamd::kafka
