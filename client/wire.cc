#include "client/wire.h"

#include <condition_variable>
#include <mutex>

namespace streamd::client::wire {

void to_proto(const Record& record, v1::Record* out) {
  out->set_key(record.key);
  out->set_payload(record.payload);
  for (const Header& h : record.headers) {
    v1::Header* header = out->add_headers();
    header->set_name(h.name);
    header->set_value(h.value);
  }
}

void to_proto(const Policy& policy, v1::Policy* out) {
  out->set_partitions(policy.partitions);
  out->set_max_record_bytes(policy.max_record_bytes);
  out->set_retain_for_ms(policy.retain_for.count());
  out->set_retain_bytes(policy.retain_bytes);
  out->set_max_bytes(policy.max_bytes);
  out->set_block_timeout_ms(policy.block_timeout.count());
  out->set_segment_bytes(policy.segment_bytes);
  out->set_compact_after_ms(policy.compact_after.count());
  out->set_timestamp_type(static_cast<v1::TimestampType>(policy.timestamp_type));
}

Record from_proto(const v1::Record& record) {
  Record out;
  out.key = record.key();
  out.payload = record.payload();
  out.headers.reserve(static_cast<size_t>(record.headers_size()));
  for (const v1::Header& h : record.headers()) out.headers.push_back({h.name(), h.value()});
  return out;
}

Entry from_proto(const v1::Entry& entry) {
  Entry out;
  out.partition = entry.partition();
  out.offset = entry.offset();
  out.appended_at_us = entry.appended_at_us();
  out.record = from_proto(entry.record());
  return out;
}

Policy from_proto(const v1::Policy& policy) {
  Policy out;
  out.partitions = policy.partitions();
  out.max_record_bytes = policy.max_record_bytes();
  out.retain_for = std::chrono::milliseconds(policy.retain_for_ms());
  out.retain_bytes = policy.retain_bytes();
  out.max_bytes = policy.max_bytes();
  out.block_timeout = std::chrono::milliseconds(policy.block_timeout_ms());
  out.segment_bytes = policy.segment_bytes();
  out.compact_after = std::chrono::milliseconds(policy.compact_after_ms());
  out.timestamp_type = static_cast<TimestampType>(policy.timestamp_type());
  return out;
}

Error from_proto(const v1::Error& error) {
  Fields fields(error.fields().begin(), error.fields().end());
  std::string name = error.name();
  if (name.empty()) {
    if (const ErrorInfo* info = error_info(error.code()); info != nullptr) name = std::string(info->name);
  }
  return Error(error.code(), std::move(name), error.message(), std::move(fields));
}

void call_all(Connection& connection, std::vector<v1::Request>& requests, std::chrono::milliseconds timeout,
              std::vector<Status>* statuses, std::vector<v1::Response>* responses) {
  std::mutex mutex;
  std::condition_variable cv;
  size_t done = 0;
  statuses->assign(requests.size(), Status());
  responses->clear();
  responses->resize(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    connection.call_async(requests[i], timeout, [&, i](const Status& status, v1::Response& response) {
      std::lock_guard lock(mutex);
      (*statuses)[i] = status;
      (*responses)[i].Swap(&response);
      ++done;
      cv.notify_all();
    });
  }
  std::unique_lock lock(mutex);
  cv.wait(lock, [&] { return done == requests.size(); });
}

}  // namespace streamd::client::wire
