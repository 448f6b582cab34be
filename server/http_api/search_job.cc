#include "server/http_api/search_job.h"

#include <algorithm>
#include <cctype>
#include <functional>

#include "server/auth/crypto.h"

namespace streamd::http_api {
namespace {

bool contains(std::string_view hay, std::string_view needle, bool ignore_case) {
  if (needle.empty()) return true;
  if (!ignore_case) return hay.find(needle) != std::string_view::npos;
  return std::search(hay.begin(), hay.end(), needle.begin(), needle.end(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
         }) != hay.end();
}

}  // namespace

SearchJob::SearchJob(const Broker& broker, Executor& workers, SearchSpec spec, Cursor first, uint64_t total)
    : broker_(broker), workers_(workers), spec_(std::move(spec)), first_(std::move(first)) {
  position_ = spec_.start;
  for (const auto& [p, o] : position_) live_.push_back(p);
  progress_.total = total;
  progress_.resume = position_;
}

bool SearchJob::matches(const SearchSpec& spec, std::string_view key, std::string_view payload,
                        const std::vector<HeaderView>& headers) {
  if (spec.in_key && contains(key, spec.query, spec.ignore_case)) return true;
  if (spec.in_payload && contains(payload, spec.query, spec.ignore_case)) return true;
  if (spec.in_headers) {
    for (const HeaderView& h : headers) {
      if (contains(h.name, spec.query, spec.ignore_case) || contains(h.value, spec.query, spec.ignore_case)) {
        return true;
      }
    }
  }
  return false;
}

void SearchJob::post() {
  workers_.post([self = shared_from_this()] { self->slice(); });
}

void SearchJob::cancel() {
  std::lock_guard lock(mu_);
  cancelled_ = true;
}

SearchProgress SearchJob::progress() const {
  std::lock_guard lock(mu_);
  SearchProgress out = progress_;
  out.elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                       (progress_.done ? finished_at_ : std::chrono::steady_clock::now()) - began_)
                       .count();
  return out;
}

bool SearchJob::finished() const {
  std::lock_guard lock(mu_);
  return progress_.done;
}

std::chrono::steady_clock::time_point SearchJob::finished_at() const {
  std::lock_guard lock(mu_);
  return finished_at_;
}

void SearchJob::stop(std::string why) {
  std::lock_guard lock(mu_);
  progress_.done = true;
  progress_.stopped_by = std::move(why);
  progress_.resume = position_;
  finished_at_ = std::chrono::steady_clock::now();
  // Newest-first chunks are scanned partition by partition; the answer is in append order.
  auto newer = [](const FoundRecord& a, const FoundRecord& b) {
    return std::tie(a.appended_at, a.partition, a.offset) > std::tie(b.appended_at, b.partition, b.offset);
  };
  if (spec_.order == PageOrder::kNewest) {
    std::sort(progress_.matches.begin(), progress_.matches.end(), newer);
  } else {
    std::sort(progress_.matches.begin(), progress_.matches.end(),
              [&](const FoundRecord& a, const FoundRecord& b) { return newer(b, a); });
  }
}

void SearchJob::slice() {
  const auto began = std::chrono::steady_clock::now();
  bool cancelled = false;
  uint64_t budget = 0;
  {
    std::lock_guard lock(mu_);
    if (progress_.done) return;
    cancelled = cancelled_;
    budget = spec_.max_records > progress_.scanned ? spec_.max_records - progress_.scanned : 0;
  }
  if (cancelled) return stop("cancelled");
  if (began - began_ >= spec_.max_time) return stop("max_time");
  while (!live_.empty()) {
    if (budget == 0) return stop("max_records");
    turn_ %= live_.size();
    const int32_t p = live_[turn_];
    if (!scan_chunk(p, budget)) {
      live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(turn_));
    } else {
      ++turn_;
    }
    bool enough = false;
    {
      std::lock_guard lock(mu_);
      progress_.resume = position_;
      enough = progress_.matches.size() >= spec_.max_matches;
    }
    if (enough) return stop("max_matches");
    if (std::chrono::steady_clock::now() - began >= kSliceBudget) break;
  }
  const auto took = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - began);
  {
    std::lock_guard lock(mu_);
    progress_.longest_slice_us = std::max<int64_t>(progress_.longest_slice_us, took.count());
  }
  if (live_.empty()) return stop("end");
  post();
}

bool SearchJob::scan_chunk(int32_t p, uint64_t& budget) {
  uint64_t& pos = position_[p];
  const bool newest = spec_.order == PageOrder::kNewest;
  const uint64_t floor = newest ? first_.at(p) : 0;
  if (newest && pos <= floor) return false;
  // A chunk's records, grown while chunks stay small in bytes and shrunk when they grow big, so a
  // chunk of large records neither holds much memory nor outlasts a slice.
  uint64_t& chunk = chunk_.try_emplace(p, 64).first->second;
  const uint64_t want = std::min<uint64_t>(budget, chunk);
  const uint64_t from = newest ? pos - std::min(want, pos - floor) : pos;
  const uint64_t end = newest ? pos : UINT64_MAX;
  // Newest-first reads [from, end) forward, in as many reads as its bytes take, then scans it
  // backwards.
  std::vector<ReadResult> owners;
  std::vector<const EntryView*> entries;
  uint64_t cur = from;
  uint64_t next_from = from;
  while (cur < end) {
    const auto n = static_cast<int32_t>(newest ? std::min<uint64_t>(end - cur, want) : want);
    auto read = broker_.read(spec_.stream, {ReadCursor{PartitionId(p), Offset(cur)}}, n, kChunkBytes);
    if (!read.ok() || !read->front().status.ok()) {
      // The stream or partition went away, or the range was trimmed meanwhile: this partition ends.
      return false;
    }
    ReadResult& r = read->front().result;
    next_from = r.next_from.value;
    if (r.entries.empty()) break;
    owners.push_back(std::move(r));
    for (const EntryView& e : owners.back().entries) {
      if (e.offset.value < end) entries.push_back(&e);
    }
    if (!newest) break;
    const uint64_t after = owners.back().entries.back().offset.value + 1;
    if (after <= cur) break;
    cur = after;
  }
  uint64_t chunk_bytes = 0;
  for (const EntryView* e : entries) chunk_bytes += e->key.size() + e->payload.size();
  if (chunk_bytes < kChunkBytes / 2) {
    chunk = std::min<uint64_t>(chunk * 2, kChunkRecords);
  } else if (chunk_bytes > kChunkBytes * 2) {
    chunk = std::max<uint64_t>(chunk / 2, 1);
  }
  if (newest) std::reverse(entries.begin(), entries.end());
  std::vector<FoundRecord> found;
  uint64_t scanned = 0;
  for (const EntryView* e : entries) {
    ++scanned;
    if (matches(spec_, e->key, e->payload, e->headers)) {
      FoundRecord f{PartitionId(p), e->offset, e->appended_at, Record{std::string(e->key), std::string(e->payload), {}},
                    e->create_time};
      for (const HeaderView& h : e->headers) f.record.headers.emplace_back(std::string(h.name), std::string(h.value));
      found.push_back(std::move(f));
    }
  }
  budget -= std::min(budget, scanned);
  {
    std::lock_guard lock(mu_);
    progress_.scanned += scanned;
    for (FoundRecord& f : found) {
      if (progress_.matches.size() < spec_.max_matches) progress_.matches.push_back(std::move(f));
    }
  }
  if (newest) {
    pos = from;
    return pos > floor;
  }
  if (entries.empty()) {
    const bool moved = next_from > pos;
    pos = std::max(pos, next_from);
    return moved;  // at the end (or only holes behind it): done when it did not move
  }
  pos = entries.back()->offset.value + 1;
  return true;
}

Result<std::string> ScanJobs::add(const std::string& principal, std::shared_ptr<SearchJob> job) {
  std::lock_guard lock(mu_);
  reap();
  size_t running = 0;
  size_t mine = 0;
  for (const auto& [id, e] : jobs_) {
    if (e.job->finished()) continue;
    ++running;
    mine += e.principal == principal ? 1 : 0;
  }
  if (running >= kMaxRunning || mine >= kMaxPerPrincipal) {
    return Status(Code::kUnavailable, "too many searches are running; cancel one or wait for it",
                  {{"running", std::to_string(running)},
                   {"limit", std::to_string(mine >= kMaxPerPrincipal ? kMaxPerPrincipal : kMaxRunning)}});
  }
  std::string id = auth::hex_encode(auth::random_bytes(12));
  jobs_.emplace(id, Entry{principal, job});
  job->start();
  return id;
}

std::shared_ptr<SearchJob> ScanJobs::find(const std::string& id, const std::string& principal) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end() || it->second.principal != principal) return nullptr;
  return it->second.job;
}

bool ScanJobs::cancel(const std::string& id, const std::string& principal) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end() || it->second.principal != principal) return false;
  it->second.job->cancel();
  return true;
}

void ScanJobs::stop() {
  std::lock_guard lock(mu_);
  for (auto& [id, e] : jobs_) e.job->cancel();
}

void ScanJobs::reap() {
  const auto now = std::chrono::steady_clock::now();
  std::erase_if(jobs_, [&](const auto& entry) {
    const auto& job = entry.second.job;
    return job->finished() && now - job->finished_at() > kKeepFinished;
  });
}

}  // namespace streamd::http_api
