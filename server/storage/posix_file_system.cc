// POSIX implementation of the FileSystem seam (file_system.h).
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <vector>

#include "server/storage/file_system.h"

namespace streamd {
namespace {

class PosixRegion final : public MappedRegion {
 public:
  PosixRegion(char* data, size_t size, std::string path) : data_(data), size_(size), path_(std::move(path)) {}
  ~PosixRegion() override {
    if (data_ != nullptr) ::munmap(data_, size_);
  }
  char* data() override { return data_; }
  size_t size() const override { return size_; }
  Status sync() override {
    if (size_ > 0 && ::msync(data_, size_, MS_SYNC) != 0) return Status::io_error("msync", path_, errno);
    return Status();
  }

 private:
  char* data_;
  size_t size_;
  std::string path_;
};

class PosixFile final : public File {
 public:
  PosixFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~PosixFile() override { ::close(fd_); }

  const std::string& path() const override { return path_; }

  Status write_at(FilePosition pos, std::string_view data) override {
    const char* p = data.data();
    size_t left = data.size();
    auto off = static_cast<off_t>(pos.value);
    while (left > 0) {
      ssize_t n = ::pwrite(fd_, p, left, off);
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status::io_error("pwrite", path_, errno);
      }
      p += n;
      left -= static_cast<size_t>(n);
      off += n;
    }
    return Status();
  }

  Status write_vectored(FilePosition pos, std::span<const std::string_view> pieces) override {
    std::vector<iovec> iov;
    iov.reserve(pieces.size());
    for (std::string_view piece : pieces) {
      if (!piece.empty()) iov.push_back({const_cast<char*>(piece.data()), piece.size()});
    }
    auto off = static_cast<off_t>(pos.value);
    size_t first = 0;
    while (first < iov.size()) {
      int count = static_cast<int>(std::min<size_t>(iov.size() - first, IOV_MAX));
      ssize_t n = ::pwritev(fd_, iov.data() + first, count, off);
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status::io_error("pwritev", path_, errno);
      }
      off += n;
      // Skip what was written; a short write leaves the rest of a piece for the next call.
      auto done = static_cast<size_t>(n);
      while (first < iov.size() && done >= iov[first].iov_len) done -= iov[first++].iov_len;
      if (done > 0) {
        iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + done;
        iov[first].iov_len -= done;
      }
    }
    return Status();
  }

  void start_writeback(FilePosition pos, uint64_t length) override {
    // Best effort: an error here surfaces, if it matters, from the sync that follows.
    ::sync_file_range(fd_, static_cast<off_t>(pos.value), static_cast<off_t>(length), SYNC_FILE_RANGE_WRITE);
  }

  Result<size_t> read_at(FilePosition pos, char* out, size_t n) const override {
    size_t done = 0;
    while (done < n) {
      ssize_t r = ::pread(fd_, out + done, n - done, static_cast<off_t>(pos.value + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        return Status::io_error("pread", path_, errno);
      }
      if (r == 0) break;
      done += static_cast<size_t>(r);
    }
    return done;
  }

  Status sync() override {
    if (::fdatasync(fd_) != 0) return Status::io_error("fdatasync", path_, errno);
    return Status();
  }

  Status truncate(uint64_t size) override {
    if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) return Status::io_error("ftruncate", path_, errno);
    return Status();
  }

  Result<uint64_t> size() const override {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) return Status::io_error("fstat", path_, errno);
    return static_cast<uint64_t>(st.st_size);
  }

  Result<std::unique_ptr<MappedRegion>> map(size_t length) override {
    if (length == 0) return std::unique_ptr<MappedRegion>(new PosixRegion(nullptr, 0, path_));
    void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (p == MAP_FAILED) return Status::io_error("mmap", path_, errno);
    return std::unique_ptr<MappedRegion>(new PosixRegion(static_cast<char*>(p), length, path_));
  }

 private:
  int fd_;
  std::string path_;
};

class PosixLock final : public FileLock {
 public:
  explicit PosixLock(int fd) : fd_(fd) {}
  ~PosixLock() override {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }

 private:
  int fd_;
};

class PosixFileSystem final : public FileSystem {
 public:
  Result<std::unique_ptr<File>> open(const std::string& path, OpenMode mode) override {
    int flags = O_CLOEXEC;
    switch (mode) {
      case OpenMode::kReadOnly: flags |= O_RDONLY; break;
      case OpenMode::kReadWrite: flags |= O_RDWR; break;
      case OpenMode::kCreate: flags |= O_RDWR | O_CREAT; break;
      case OpenMode::kCreateNew: flags |= O_RDWR | O_CREAT | O_EXCL; break;
    }
    int fd = ::open(path.c_str(), flags, 0600);
    if (fd < 0) return Status::io_error("open", path, errno);
    return std::unique_ptr<File>(new PosixFile(fd, path));
  }

  Status remove(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return Status::io_error("unlink", path, errno);
    return Status();
  }

  Status rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return Status::io_error("rename", from, errno).with("to", to);
    return Status();
  }

  Status sync_dir(const std::string& dir) override {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return Status::io_error("open", dir, errno);
    int rc = ::fsync(fd);
    int err = errno;
    ::close(fd);
    if (rc != 0) return Status::io_error("fsync", dir, err);
    return Status();
  }

  Status create_dir(const std::string& path) override {
    if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) return Status::io_error("mkdir", path, errno);
    return Status();
  }

  Status remove_dir(const std::string& path) override {
    if (::rmdir(path.c_str()) != 0) return Status::io_error("rmdir", path, errno);
    return Status();
  }

  Result<std::vector<std::string>> list_dir(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return Status::io_error("opendir", dir, errno);
    std::vector<std::string> names;
    while (struct dirent* e = ::readdir(d)) {
      std::string_view name(e->d_name);
      if (name != "." && name != "..") names.emplace_back(name);
    }
    ::closedir(d);
    return names;
  }

  bool exists(const std::string& path) override {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
  }

  Result<std::unique_ptr<FileLock>> lock(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return Status::io_error("open", path, errno);
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      int err = errno;
      ::close(fd);
      return Status::io_error("flock", path, err);
    }
    return std::unique_ptr<FileLock>(new PosixLock(fd));
  }
};

}  // namespace

FileSystem& posix_file_system() {
  static PosixFileSystem fs;
  return fs;
}

}  // namespace streamd
