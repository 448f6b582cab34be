#include "server/storage/data_dir.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace streamd {
namespace {

Status unusable(const std::string& path, std::string reason, Fields extra = {}) {
  extra["path"] = path;
  extra["reason"] = reason;
  return Status(Code::kStreamDirectoryUnusable, "The stream directory " + path + " cannot be used: " + reason,
                std::move(extra));
}

std::string parent_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// mkdir -p: creates every missing component, each mode 0700, and syncs the directory it was made in:
// until then a power cut can undo the mkdir, and everything later made durable inside would go with it.
Status create_with_parents(FileSystem& fs, const std::string& path) {
  auto create = [&fs](const std::string& dir) -> Status {
    STREAMD_RETURN_IF_ERROR(fs.create_dir(dir));
    return fs.sync_dir(parent_of(dir));
  };
  for (size_t slash = path.find('/', 1); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    std::string prefix = path.substr(0, slash);
    if (!fs.exists(prefix)) STREAMD_RETURN_IF_ERROR(create(prefix));
  }
  return create(path);
}

std::string octal_mode(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

}  // namespace

Result<std::unique_ptr<DataDir>> DataDir::open(FileSystem& fs, const std::string& path) {
  if (path.empty()) return unusable(path, "no path given");
  std::string dir = path;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();

  if (!fs.exists(dir)) {
    Status created = create_with_parents(fs, dir);
    if (!created.ok()) {
      return unusable(dir, "cannot be created: " + created.field("error"), {{"errno", created.field("errno")}});
    }
  }
  // The permission checks ask the operating system directly: FileSystem models file contents, and
  // these are facts about the directory the operator pointed us at, checked once at start.
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    int err = errno;
    return unusable(dir, std::string("cannot be inspected: ") + std::strerror(err), {{"errno", std::to_string(err)}});
  }
  if (!S_ISDIR(st.st_mode)) return unusable(dir, "not a directory");
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return unusable(dir, "writable by group or others", {{"mode", octal_mode(st.st_mode)}});
  }

  auto lock = fs.lock(dir + "/" + kLockFile);
  if (!lock.ok()) {
    std::string err = lock.status().field("errno");
    bool held = err == std::to_string(EWOULDBLOCK) || err == std::to_string(EAGAIN);
    return unusable(dir, held ? "locked by another broker" : "cannot be locked: " + lock.status().field("error"),
                    {{"errno", err}});
  }
  std::unique_ptr<DataDir> data_dir(new DataDir(dir, std::move(lock).value()));
  Status streams = fs.create_dir(data_dir->streams_dir());
  if (!streams.ok()) return unusable(dir, "cannot create " + data_dir->streams_dir() + ": " + streams.field("error"));
  STREAMD_RETURN_IF_ERROR(fs.sync_dir(dir));
  return data_dir;
}

}  // namespace streamd
