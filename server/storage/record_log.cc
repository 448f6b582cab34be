#include "server/storage/record_log.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "server/storage/coding.h"
#include "server/storage/crc32c.h"

namespace streamd {
namespace {

constexpr size_t kFileHeaderSize = 8;  // magic, version, 3 reserved zero bytes

bool all_zero(std::string_view bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](char c) { return c == 0; });
}

}  // namespace

RecordLog::RecordLog(FileSystem& fs, std::string dir, const RecordLogFormat& format, Executor& executor,
                     RecordLogOptions options, RecordLogOwner& owner)
    : fs_(fs),
      dir_(std::move(dir)),
      format_(format),
      path_(dir_ + "/" + format.file_name),
      options_(options),
      owner_(owner),
      zero_fill_(options.preallocate_bytes),
      commit_(executor, Status(Code::kUnavailable, std::string("The ") + format.what + " is closed"),
              [this](std::vector<Pending>& group) { flush(group); }) {}

RecordLog::~RecordLog() {
  close();
}

Result<std::unique_ptr<RecordLog>> RecordLog::open(FileSystem& fs, std::string dir,
                                                   const RecordLogFormat& format, Executor& executor,
                                                   RecordLogOptions options, RecordLogOwner& owner) {
  std::unique_ptr<RecordLog> log(new RecordLog(fs, std::move(dir), format, executor, options, owner));
  STREAMD_RETURN_IF_ERROR(log->recover());
  return log;
}

std::string RecordLog::file_header() const {
  std::string out(format_.magic, sizeof format_.magic);
  out.push_back(static_cast<char>(format_.version));
  out.append(3, '\0');
  return out;
}

Status RecordLog::damaged(std::string reason) const {
  return Status(Code::kStreamBackendFailed,
                std::string("The ") + format_.what + " " + path_ + " is damaged: " + reason,
                {{"op", std::string("read ") + format_.what}, {"path", path_}, {"reason", reason}});
}

void RecordLog::frame(std::string& out, std::string_view body) {
  char header[kRecordHeaderSize];
  coding::put_fixed32(header, static_cast<uint32_t>(body.size()));
  coding::put_fixed32(header + 4, crc32c(body));
  out.append(header, sizeof header);
  out += body;
}

Status RecordLog::recover() {
  const std::string temp = dir_ + "/" + format_.temp_file_name;
  // A temp file is a rewrite that never reached its rename: the log it would have replaced is intact.
  if (fs_.exists(temp)) STREAMD_RETURN_IF_ERROR(fs_.remove(temp));
  if (!fs_.exists(path_)) return rewrite();

  auto file = fs_.open(path_, OpenMode::kReadWrite);
  if (!file.ok()) return file.status();
  auto size = (*file)->size();
  if (!size.ok()) return size.status();
  std::string bytes(*size, '\0');
  auto n = (*file)->read_at(FilePosition(0), bytes.data(), bytes.size());
  if (!n.ok()) return n.status();
  bytes.resize(*n);

  // A log shorter than its header was being created when the process stopped: it holds no record.
  if (bytes.size() < kFileHeaderSize) return rewrite();
  if (std::string_view(bytes).substr(0, kFileHeaderSize) != file_header()) return damaged("bad file header");

  size_t pos = kFileHeaderSize;
  uint64_t records = 0;
  std::string stopped;  // why the scan ended before the zero-filled end of the file
  bool corrupt = false;
  const std::string_view all(bytes);
  while (pos < bytes.size()) {
    std::string_view rest = all.substr(pos);
    if (rest.size() < kRecordHeaderSize || coding::get_fixed32(rest.data()) == 0) {
      // Zero-filled space is the end; anything else here is a write cut short.
      if (!all_zero(rest)) stopped = "record header cut short";
      break;
    }
    const uint32_t length = coding::get_fixed32(rest.data());
    const uint32_t crc = coding::get_fixed32(rest.data() + 4);
    if (length > format_.max_body_bytes) {
      stopped = "impossible record length " + std::to_string(length);
      corrupt = true;
      break;
    }
    if (rest.size() < kRecordHeaderSize + length) {
      stopped = "record cut short";
      break;
    }
    const std::string_view body = rest.substr(kRecordHeaderSize, length);
    if (crc32c(body) != crc || !owner_.replay(body)) {
      stopped = "bad record";
      // The last record written failing its CRC is a torn write; records after it mean damage.
      corrupt = !all_zero(rest.substr(kRecordHeaderSize + length));
      break;
    }
    ++records;
    pos += kRecordHeaderSize + length;
  }

  if (!stopped.empty()) {
    if (corrupt) {
      spdlog::error("{} {}: {} at byte {}; the {} bytes after it are dropped, {} records kept", format_.what,
                    path_, stopped, pos, bytes.size() - pos, records);
    } else {
      spdlog::info("{} {}: torn tail at byte {} ({}), {} records kept", format_.what, path_, pos, stopped,
                   records);
    }
  }
  if (!stopped.empty() || pos > std::max<uint64_t>(options_.rewrite_min_bytes, 2 * owner_.live_bytes())) {
    return rewrite();
  }
  file_ = std::move(file).value();
  end_ = pos;
  zero_fill_.reset(bytes.size());
  return Status();
}

Status RecordLog::rewrite() {
  std::string bytes = file_header();
  bytes.reserve(kFileHeaderSize + owner_.live_bytes());
  owner_.live_records(bytes);
  // A failure before the rename leaves the old log in place and file_ on it; past the rename, file_
  // stays empty on failure, because appending to the old (now unlinked) log would lose records.
  STREAMD_RETURN_IF_ERROR(
      replace_file(fs_, dir_, dir_ + "/" + format_.temp_file_name, path_, bytes, [this] { file_.reset(); }));
  auto file = fs_.open(path_, OpenMode::kReadWrite);
  if (!file.ok()) return file.status();
  file_ = std::move(file).value();
  end_ = bytes.size();
  zero_fill_.reset(bytes.size());
  return Status();
}

void RecordLog::append(std::string body, Done done) {
  commit_.submit(Pending{std::move(body), std::move(done)});
}

void RecordLog::flush(std::vector<Pending>& group) {
  std::string bytes;
  for (const Pending& p : group) frame(bytes, p.body);

  Status status = zero_fill_.ensure(*file_, end_, end_ + bytes.size());
  if (status.ok()) status = file_->write_at(FilePosition(end_), bytes);
  if (status.out_of_space()) {
    // Nothing of this group is synced, and what was is intact: cut the unfinished write away and take
    // appends again once space is freed.
    Status cut = cut_unfinished_write(*file_, end_, &zero_fill_);
    if (cut.ok()) {
      spdlog::warn("{} {}: {}; the records were not written", format_.what, path_, status.to_string());
      const Status refusal(Code::kStreamBackendFailed,
                           "no space left on the device: the record was not written; records are taken again "
                           "once space is freed",
                           status.fields());
      for (Pending& p : group) p.done(refusal);
      return;
    }
    status = cut;
  }
  if (status.ok()) status = file_->sync();
  if (!status.ok()) {
    spdlog::error("{} {}: {}; refusing records until reopened", format_.what, path_, status.to_string());
    commit_.fail(status);
    for (Pending& p : group) p.done(status);
    return;
  }
  end_ += bytes.size();
  for (Pending& p : group) p.done(Status());
  if (end_ > std::max<uint64_t>(options_.rewrite_min_bytes, 2 * owner_.live_bytes())) {
    // Every record is already durable in the long log; a failed rewrite leaves it in place, and the
    // next open tries again.
    Status rewritten = rewrite();
    if (!rewritten.ok()) {
      spdlog::warn("{} {}: rewrite failed: {}", format_.what, path_, rewritten.to_string());
      if (!file_) commit_.fail(rewritten);
    }
  }
}

void RecordLog::close() {
  commit_.close();
}

bool RecordLog::failed() const {
  return commit_.failed();
}

}  // namespace streamd
