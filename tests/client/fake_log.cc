#include "fake_log.h"

#include <algorithm>

#include "client/error.h"
#include "client/partitioner.h"

namespace streamd::client::testing {
namespace {

void fail(v1::Response* response, ErrorCode code, const std::map<std::string, std::string>& fields = {}) {
  Error e(code);
  response->mutable_error()->set_code(e.code());
  response->mutable_error()->set_name(e.name());
  response->mutable_error()->set_message(e.message());
  for (const auto& [k, v] : fields) (*response->mutable_error()->mutable_fields())[k] = v;
}

}  // namespace

void FakeLog::create(const std::string& stream, int32_t partitions) {
  std::lock_guard lock(mutex_);
  Stream& s = streams_[stream];
  s.partitions.resize(static_cast<size_t>(partitions));
  s.producers.resize(static_cast<size_t>(partitions));
  for (auto& p : s.producers) p = std::make_unique<ProducerState>();
}

void FakeLog::set_rotation(const std::string& stream, std::vector<int32_t> partitions) {
  std::lock_guard lock(mutex_);
  streams_[stream].in_rotation = std::move(partitions);
}

std::vector<v1::Record> FakeLog::records(const std::string& stream, int32_t partition) {
  std::lock_guard lock(mutex_);
  std::vector<v1::Record> out;
  for (const auto& e : streams_.at(stream).partitions.at(static_cast<size_t>(partition)))
    out.push_back(e.record());
  return out;
}

uint64_t FakeLog::appends() const {
  std::lock_guard lock(mutex_);
  return appends_;
}

void FakeLog::append(Stream& stream, const v1::AppendRequest& request, v1::Response* response) {
  const auto count = static_cast<int32_t>(stream.partitions.size());
  int32_t partition = request.has_partition() ? request.partition() : -1;
  if (partition >= count) return fail(response, ErrorCode::kUnknownPartition);
  for (const auto& r : request.records()) {
    if (r.key().empty()) continue;
    const int32_t p = partition_of(r.key(), count);
    if (partition >= 0 && p != partition) return fail(response, ErrorCode::kPartitionsMixed);
    partition = p;
  }
  if (partition < 0) partition = static_cast<int32_t>(stream.rotation++ % stream.partitions.size());
  auto& log = stream.partitions[static_cast<size_t>(partition)];
  const uint64_t first = log.size();
  if (request.has_producer()) {
    const auto last_delta = static_cast<uint32_t>(request.records_size() - 1);
    const ProducerStamp stamp{request.producer().producer_id(), static_cast<int16_t>(request.producer().epoch()),
                              request.producer().sequence(), TxnRole::kNone};
    ProducerState& producers = *stream.producers[static_cast<size_t>(partition)];
    const ProducerState::Check check = producers.check(stamp, last_delta);
    if (check.verdict == ProducerState::Verdict::kRefused) {
      return fail(response, static_cast<ErrorCode>(static_cast<uint32_t>(check.refusal.code())));
    }
    if (check.verdict == ProducerState::Verdict::kDuplicate) {
      response->mutable_append()->set_partition(partition);
      response->mutable_append()->set_first(check.original.first.value);
      response->mutable_append()->set_last(check.original.last.value);
      return;
    }
    producers.stage(stamp, last_delta, {Offset(first), Offset(first + last_delta)}, Timestamp(clock_us_));
    producers.settle(1, Timestamp(clock_us_));
  }
  clock_us_ += 1000;
  for (const auto& r : request.records()) {
    v1::Entry entry;
    entry.set_partition(partition);
    entry.set_offset(log.size());
    entry.set_appended_at_us(clock_us_);
    *entry.mutable_record() = r;
    log.push_back(std::move(entry));
  }
  response->mutable_append()->set_partition(partition);
  response->mutable_append()->set_first(first);
  response->mutable_append()->set_last(log.size() - 1);
}

bool FakeLog::handle(const v1::Request& request, v1::Response* response) {
  std::unique_lock lock(mutex_);
  auto stream_of = [&](const std::string& name) -> Stream* {
    auto it = streams_.find(name);
    if (it == streams_.end()) {
      fail(response, ErrorCode::kStreamNotFound, {{"stream", name}});
      return nullptr;
    }
    return &it->second;
  };
  auto partition_ok = [&](Stream& s, int32_t p) {
    if (p >= 0 && static_cast<size_t>(p) < s.partitions.size()) return true;
    fail(response, ErrorCode::kUnknownPartition, {{"partition", std::to_string(p)}});
    return false;
  };
  switch (request.body_case()) {
    case v1::Request::kDescribeStream: {
      Stream* s = stream_of(request.describe_stream().name());
      if (s == nullptr) break;
      auto* d = response->mutable_describe_stream();
      d->set_name(request.describe_stream().name());
      d->mutable_policy()->set_partitions(static_cast<int32_t>(s->partitions.size()));
      for (size_t p = 0; p < s->partitions.size(); ++p) {
        auto* info = d->add_partitions();
        info->set_partition(static_cast<int32_t>(p));
        info->set_next(s->partitions[p].size());
        const auto& marked = s->in_rotation;
        info->set_in_rotation(std::find(marked.begin(), marked.end(), static_cast<int32_t>(p)) != marked.end());
      }
      break;
    }
    case v1::Request::kAppend: {
      Stream* s = stream_of(request.append().stream());
      if (s == nullptr) break;
      const uint64_t number = ++appends_;
      if (hook_ && hook_(number)) {
        if (apply_before_drop_) append(*s, request.append(), response);
        lock.unlock();
        broker_.drop_connections();
        return false;
      }
      if (refuse_) {
        if (auto code = refuse_(number)) {
          fail(response, *code);
          break;
        }
      }
      append(*s, request.append(), response);
      break;
    }
    case v1::Request::kInitProducer: {
      ++inits_;
      const auto& r = request.init_producer();
      auto* answer = response->mutable_init_producer();
      if (r.has_current()) {
        ++bumps_;
        answer->set_producer_id(r.producer_id());
        answer->set_epoch(r.epoch() + 1);
      } else {
        answer->set_producer_id(next_producer_id_++);
      }
      break;
    }
    case v1::Request::kRead: {
      Stream* s = stream_of(request.read().stream());
      if (s == nullptr) break;
      for (const auto& cursor : request.read().cursors()) {
        auto* part = response->mutable_read()->add_partitions();
        part->set_partition(cursor.partition());
        if (!partition_ok(*s, cursor.partition())) {
          *part->mutable_error() = response->error();
          response->clear_error();
          continue;
        }
        const auto& log = s->partitions[static_cast<size_t>(cursor.partition())];
        uint64_t at = cursor.from();
        if (at > log.size()) {
          fail(response, ErrorCode::kOffsetAhead);
          *part->mutable_error() = response->error();
          response->clear_error();
          continue;
        }
        for (int n = 0; at < log.size() && n < request.read().max_records(); ++n, ++at) {
          *part->add_entries() = log[at];
        }
        part->set_next_from(at);
      }
      break;
    }
    case v1::Request::kBounds: {
      Stream* s = stream_of(request.bounds().stream());
      if (s == nullptr || !partition_ok(*s, request.bounds().partition())) break;
      response->mutable_bounds()->set_partition(request.bounds().partition());
      response->mutable_bounds()->set_next(
          s->partitions[static_cast<size_t>(request.bounds().partition())].size());
      break;
    }
    case v1::Request::kOffsetAt: {
      Stream* s = stream_of(request.offset_at().stream());
      if (s == nullptr || !partition_ok(*s, request.offset_at().partition())) break;
      const auto& log = s->partitions[static_cast<size_t>(request.offset_at().partition())];
      uint64_t offset = 0;
      while (offset < log.size() && log[offset].appended_at_us() < request.offset_at().time_us()) ++offset;
      response->mutable_offset_at()->set_offset(offset);
      break;
    }
    case v1::Request::kCommit: {
      Stream* s = stream_of(request.commit().stream());
      if (s == nullptr || !partition_ok(*s, request.commit().partition())) break;
      s->committed[{request.commit().group(), request.commit().partition()}] = request.commit().next();
      response->mutable_commit()->set_next(request.commit().next());
      break;
    }
    case v1::Request::kCommitted: {
      Stream* s = stream_of(request.committed().stream());
      if (s == nullptr || !partition_ok(*s, request.committed().partition())) break;
      auto it = s->committed.find({request.committed().group(), request.committed().partition()});
      if (it == s->committed.end()) {
        fail(response, ErrorCode::kUnknownGroup);
        break;
      }
      response->mutable_committed()->set_next(it->second);
      break;
    }
    default:
      fail(response, ErrorCode::kProtocolError);
  }
  return true;
}

}  // namespace streamd::client::testing
