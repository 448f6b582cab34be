// FuseServer: the FUSE low-level callbacks, each a thin translation onto PowerCutModel, and the mount's
// life cycle.
#define FUSE_USE_VERSION 312
#include "tests/powercut/fuse_server.h"

#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <vector>

namespace streamd::powercut {

struct FuseServer::Callbacks {
  static PowerCutModel& model(fuse_req_t req) { return static_cast<FuseServer*>(fuse_req_userdata(req))->model_; }

  static struct stat to_stat(const NodeAttr& a) {
    struct stat st {};
    st.st_ino = a.ino;
    st.st_mode = (a.is_dir ? S_IFDIR : S_IFREG) | a.mode;
    st.st_nlink = a.nlink;
    st.st_size = static_cast<off_t>(a.size);
    st.st_blksize = static_cast<blksize_t>(kPageBytes);
    st.st_blocks = static_cast<blkcnt_t>((a.size + 511) / 512);
    st.st_uid = geteuid();
    st.st_gid = getegid();
    st.st_mtim.tv_sec = a.mtime_ns / 1'000'000'000;
    st.st_mtim.tv_nsec = a.mtime_ns % 1'000'000'000;
    st.st_ctim.tv_sec = a.ctime_ns / 1'000'000'000;
    st.st_ctim.tv_nsec = a.ctime_ns % 1'000'000'000;
    st.st_atim = st.st_mtim;
    return st;
  }

  // Names and attributes are never cached by the kernel: after a cut they may be gone.
  static void reply_entry(fuse_req_t req, const NodeAttr& a) {
    fuse_entry_param e{};
    e.ino = a.ino;
    e.generation = 1;
    e.attr = to_stat(a);
    e.attr_timeout = 0;
    e.entry_timeout = 0;
    fuse_reply_entry(req, &e);
  }

  static void init(void*, fuse_conn_info* conn) {
    // Every write must reach the model when it is made: a page the kernel held dirty would escape the cut.
    conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
  }

  static void lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
    NodeAttr a;
    if (int err = model(req).lookup(parent, name, a)) {
      fuse_reply_err(req, err);
      return;
    }
    reply_entry(req, a);
  }

  static void forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
    model(req).forget(ino, nlookup);
    fuse_reply_none(req);
  }

  static void forget_multi(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
    for (size_t i = 0; i < count; ++i) model(req).forget(forgets[i].ino, forgets[i].nlookup);
    fuse_reply_none(req);
  }

  static void getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
    NodeAttr a;
    if (int err = model(req).getattr(ino, a)) {
      fuse_reply_err(req, err);
      return;
    }
    struct stat st = to_stat(a);
    fuse_reply_attr(req, &st, 0);
  }

  static void setattr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set, fuse_file_info*) {
    uint64_t size = 0;
    uint32_t mode = 0;
    int64_t mtime = 0;
    const bool set_size = (to_set & FUSE_SET_ATTR_SIZE) != 0;
    const bool set_mode = (to_set & FUSE_SET_ATTR_MODE) != 0;
    const bool set_mtime = (to_set & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW)) != 0;
    if (set_size) size = static_cast<uint64_t>(attr->st_size);
    if (set_mode) mode = attr->st_mode;
    if (set_mtime) {
      mtime = (to_set & FUSE_SET_ATTR_MTIME_NOW) != 0
                  ? std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count()
                  : attr->st_mtim.tv_sec * 1'000'000'000LL + attr->st_mtim.tv_nsec;
    }
    NodeAttr a;
    if (int err = model(req).setattr(ino, set_size ? &size : nullptr, set_mode ? &mode : nullptr,
                                     set_mtime ? &mtime : nullptr, a)) {
      fuse_reply_err(req, err);
      return;
    }
    struct stat st = to_stat(a);
    fuse_reply_attr(req, &st, 0);
  }

  static void mkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
    NodeAttr a;
    if (int err = model(req).mkdir(parent, name, mode, a)) {
      fuse_reply_err(req, err);
      return;
    }
    reply_entry(req, a);
  }

  static void unlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
    fuse_reply_err(req, model(req).unlink(parent, name));
  }

  static void rmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
    fuse_reply_err(req, model(req).rmdir(parent, name));
  }

  static void rename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t newparent, const char* newname,
                     unsigned int flags) {
    fuse_reply_err(req, model(req).rename(parent, name, newparent, newname, flags));
  }

  static void open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    if (int err = model(req).open(ino)) {
      fuse_reply_err(req, err);
      return;
    }
    fi->keep_cache = 0;
    fi->direct_io = 0;
    fuse_reply_open(req, fi);
  }

  static void create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, fuse_file_info* fi) {
    PowerCutModel& m = model(req);
    NodeAttr a;
    int err = m.create(parent, name, mode, (fi->flags & O_EXCL) != 0, a);
    if (err == 0 && (fi->flags & O_TRUNC) != 0 && a.size != 0) {
      const uint64_t zero = 0;
      err = m.setattr(a.ino, &zero, nullptr, nullptr, a);
    }
    if (err == 0) err = m.open(a.ino);
    if (err != 0) {
      fuse_reply_err(req, err);
      return;
    }
    fuse_entry_param e{};
    e.ino = a.ino;
    e.generation = 1;
    e.attr = to_stat(a);
    fi->keep_cache = 0;
    fi->direct_io = 0;
    fuse_reply_create(req, &e, fi);
  }

  static void read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
    std::string out;
    if (int err = model(req).read(ino, static_cast<uint64_t>(off), size, out)) {
      fuse_reply_err(req, err);
      return;
    }
    fuse_reply_buf(req, out.data(), out.size());
  }

  static void write(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t off, fuse_file_info*) {
    if (int err = model(req).write(ino, static_cast<uint64_t>(off), std::string_view(buf, size))) {
      fuse_reply_err(req, err);
      return;
    }
    fuse_reply_write(req, size);
  }

  static void flush(fuse_req_t req, fuse_ino_t, fuse_file_info*) { fuse_reply_err(req, 0); }

  static void release(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
    model(req).release(ino);
    fuse_reply_err(req, 0);
  }

  static void fsync(fuse_req_t req, fuse_ino_t ino, int, fuse_file_info*) {
    fuse_reply_err(req, model(req).fsync(ino));
  }

  // A directory is listed once, when opened, so that a listing read in several calls is consistent.
  static void opendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    auto entries = std::make_unique<std::vector<DirEntry>>();
    if (int err = model(req).readdir(ino, *entries)) {
      fuse_reply_err(req, err);
      return;
    }
    entries->insert(entries->begin(), {{".", ino, true}, {"..", kRootIno, true}});
    fi->fh = reinterpret_cast<uint64_t>(entries.release());
    fuse_reply_open(req, fi);
  }

  static void readdir(fuse_req_t req, fuse_ino_t, size_t size, off_t off, fuse_file_info* fi) {
    const auto& entries = *reinterpret_cast<const std::vector<DirEntry>*>(fi->fh);
    std::vector<char> buf(size);
    size_t used = 0;
    for (size_t i = static_cast<size_t>(off); i < entries.size(); ++i) {
      struct stat st {};
      st.st_ino = entries[i].ino;
      st.st_mode = entries[i].is_dir ? S_IFDIR : S_IFREG;
      size_t n = fuse_add_direntry(req, buf.data() + used, size - used, entries[i].name.c_str(), &st,
                                   static_cast<off_t>(i + 1));
      if (n > size - used) break;
      used += n;
    }
    fuse_reply_buf(req, buf.data(), used);
  }

  static void releasedir(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
    delete reinterpret_cast<std::vector<DirEntry>*>(fi->fh);
    fuse_reply_err(req, 0);
  }

  static void fsyncdir(fuse_req_t req, fuse_ino_t ino, int, fuse_file_info*) {
    fuse_reply_err(req, model(req).fsync(ino));
  }

  static void statfs(fuse_req_t req, fuse_ino_t) {
    struct statvfs st {};
    st.f_bsize = kPageBytes;
    st.f_frsize = kPageBytes;
    st.f_blocks = 1 << 24;
    st.f_bfree = st.f_bavail = 1 << 23;
    st.f_files = 1 << 20;
    st.f_ffree = st.f_favail = 1 << 19;
    st.f_namemax = 255;
    fuse_reply_statfs(req, &st);
  }

  static fuse_lowlevel_ops ops() {
    fuse_lowlevel_ops o{};
    o.init = init;
    o.lookup = lookup;
    o.forget = forget;
    o.forget_multi = forget_multi;
    o.getattr = getattr;
    o.setattr = setattr;
    o.mkdir = mkdir;
    o.unlink = unlink;
    o.rmdir = rmdir;
    o.rename = rename;
    o.open = open;
    o.create = create;
    o.read = read;
    o.write = write;
    o.flush = flush;
    o.release = release;
    o.fsync = fsync;
    o.opendir = opendir;
    o.readdir = readdir;
    o.releasedir = releasedir;
    o.fsyncdir = fsyncdir;
    o.statfs = statfs;
    return o;
  }
};

std::unique_ptr<FuseServer> FuseServer::mount(const std::string& mount_point, PowerCutModel& model,
                                              std::string* error) {
  std::unique_ptr<FuseServer> server(new FuseServer(mount_point, model));
  if (!server->start(error)) return nullptr;
  return server;
}

FuseServer::~FuseServer() { stop(); }

bool FuseServer::start(std::string* error) {
  static const fuse_lowlevel_ops ops = Callbacks::ops();
  std::vector<std::string> argv{"powercut", "-o", "default_permissions,fsname=powercut,subtype=powercut"};
  fuse_args args = FUSE_ARGS_INIT(0, nullptr);
  for (const auto& a : argv) fuse_opt_add_arg(&args, a.c_str());
  session_ = fuse_session_new(&args, &ops, sizeof ops, this);
  fuse_opt_free_args(&args);
  if (session_ == nullptr) {
    *error = "fuse_session_new failed";
    return false;
  }
  if (fuse_session_mount(session_, mount_point_.c_str()) != 0) {
    fuse_session_destroy(session_);
    session_ = nullptr;
    *error = "cannot mount a FUSE filesystem on " + mount_point_;
    return false;
  }
  fuse_session* se = session_;
  loop_ = std::thread([se] {
    fuse_loop_config* config = fuse_loop_cfg_create();
    fuse_loop_cfg_set_max_threads(config, 16);
    fuse_session_loop_mt(se, config);
    fuse_loop_cfg_destroy(config);
  });
  // Served by the loop from here on (a stat before it runs would wait for it forever).
  struct stat st {};
  if (::stat(mount_point_.c_str(), &st) == 0) connection_ = minor(st.st_dev);
  return true;
}

void FuseServer::stop() {
  if (session_ == nullptr) return;
  fuse_session_exit(session_);
  fuse_session_unmount(session_);
  // The loop ends when the kernel ends the connection, once nothing uses the mount any more; abort the
  // connection should anything still hold it, so that a test never hangs here.
  const std::string abort = "/sys/fs/fuse/connections/" + std::to_string(connection_) + "/abort";
  for (int i = 0; i < 100 && ::access(abort.c_str(), F_OK) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (::access(abort.c_str(), F_OK) == 0) std::ofstream(abort) << "1";
  loop_.join();
  fuse_session_destroy(session_);
  session_ = nullptr;
}

bool FuseServer::remount(const std::function<void()>& unmounted, std::string* error) {
  stop();
  unmounted();
  return start(error);
}

void FuseServer::drop_cached_pages(const std::string& path_contains) {
  if (session_ == nullptr) return;
  for (uint64_t ino : model_.files_matching(path_contains)) fuse_lowlevel_notify_inval_inode(session_, ino, 0, 0);
}

}  // namespace streamd::powercut
