// PowerCutModel: the in-memory filesystem behind the power-cut FUSE mount (powercut_fs.h), without
// FUSE, so its failure model can be tested on its own. Failure model and why: docs/RELIABILITY.md
// §"The power-cut filesystem".
//
// Every file holds two contents: what a reader sees now (live) and what its last successful fsync left
// on the simulated disk (durable). Every directory likewise holds its live entries, the entries its last
// fsync left, and the changes made since (creates, renames, unlinks, mkdirs, rmdirs) in order. An
// fsync of a file makes its data and length durable, never its name; an fsync of a directory makes its
// entries durable, never the contents of the files they name.
//
// cut() is the power failing: from that instant every call fails EIO, and what the simulated disk
// holds is computed once —
//  - kDiscard: exactly the durable state: every unsynced write, truncation and directory change lost;
//  - kTorn: as a disk under a real page cache may also hold: each directory keeps a random prefix of
//    its unsynced changes (a journal commits them in order); each file keeps its old or its new length,
//    and each 4 KiB page it changed since its last fsync comes back old, new, or torn (each 512-byte
//    sector old or new, independently). Pages are chosen independently, so writeback order is random.
// Files no surviving directory entry reaches are gone. restore() is the power coming back: the
// surviving state becomes the live state, and calls work again.
//
// A failed fsync (an injected EIO) behaves like Linux after a writeback error: the changed pages stay
// visible to readers but are dropped from what a later fsync writes, so that fsync succeeds without
// making them durable ("fsyncgate"); only a cut shows they were lost.
//
// Inode numbers are never reused. Errors are returned as positive errno values (0 is success).
// Thread-safety: every method may be called from any thread (one mutex).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace streamd::powercut {

inline constexpr uint64_t kRootIno = 1;
inline constexpr size_t kPageBytes = 4096;
inline constexpr size_t kSectorBytes = 512;

struct NodeAttr {
  uint64_t ino = 0;
  bool is_dir = false;
  uint32_t mode = 0;  // permission bits only
  uint64_t size = 0;
  uint32_t nlink = 1;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
};

struct DirEntry {
  std::string name;
  uint64_t ino = 0;
  bool is_dir = false;
};

enum class CutMode { kDiscard, kTorn };

// What a cut found and kept, for the harness's report and its checks of the daemon's recovery log.
struct CutReport {
  uint64_t files_unsynced = 0;  // surviving files that held unsynced changes
  uint64_t pages_unsynced = 0;  // their changed pages within the length the file came back with
  uint64_t pages_kept = 0;      // ... that came back new
  uint64_t pages_torn = 0;      // ... that came back part old, part new
  uint64_t dir_changes_unsynced = 0;
  uint64_t dir_changes_kept = 0;
  // Paths, relative to the mount and without a leading '/', of the surviving files that held unsynced
  // changes; and of those, the ones whose content or length is not what their last fsync left (some
  // unsynced change reached the disk), each with the first byte that differs (its old length when
  // only the length changed).
  std::set<std::string> unsynced;
  std::map<std::string, uint64_t> partly_written;
};

enum class FaultOp { kWrite, kFsync, kRead };

// The next `count` calls of `op` on files whose path contains `path_contains` fail with `err`
// (count < 0: every such call, until cleared).
struct Fault {
  FaultOp op = FaultOp::kFsync;
  int err = 5;  // EIO
  std::string path_contains;
  int count = 1;
};

class PowerCutModel {
 public:
  PowerCutModel();

  int lookup(uint64_t parent, const std::string& name, NodeAttr& out);
  int getattr(uint64_t ino, NodeAttr& out);
  // A regular file; an existing one is returned as it is (EEXIST when `exclusive`).
  int create(uint64_t parent, const std::string& name, uint32_t mode, bool exclusive, NodeAttr& out);
  int mkdir(uint64_t parent, const std::string& name, uint32_t mode, NodeAttr& out);
  int unlink(uint64_t parent, const std::string& name);
  int rmdir(uint64_t parent, const std::string& name);
  // flags: 0 or RENAME_NOREPLACE.
  int rename(uint64_t parent, const std::string& name, uint64_t new_parent, const std::string& new_name,
             unsigned flags);
  int readdir(uint64_t ino, std::vector<DirEntry>& out);
  // Changes what is given (nullptr: unchanged).
  int setattr(uint64_t ino, const uint64_t* size, const uint32_t* mode, const int64_t* mtime_ns, NodeAttr& out);
  int write(uint64_t ino, uint64_t offset, std::string_view data);
  int read(uint64_t ino, uint64_t offset, size_t length, std::string& out);
  // A file: its data and length become durable. A directory: its entries.
  int fsync(uint64_t ino);

  // Kernel references, which keep an unlinked inode alive: lookups (dropped by forget) and opens.
  void forget(uint64_t ino, uint64_t lookups);
  int open(uint64_t ino);
  void release(uint64_t ino);

  CutReport cut(CutMode mode, uint64_t seed);
  void restore();
  bool powered() const;

  void add_fault(Fault fault);
  void clear_faults();
  // Inodes of the files whose path contains `path_contains`.
  std::vector<uint64_t> files_matching(const std::string& path_contains) const;
  // The live path of an inode ("" for the root or an unlinked node).
  std::string path_of(uint64_t ino) const;

  uint64_t fsyncs() const;
  uint64_t faults_injected() const;
  size_t nodes() const;  // inodes held, for tests of their release

 private:
  using Page = std::array<char, kPageBytes>;
  using PagePtr = std::shared_ptr<Page>;  // null: a page of zeros
  struct Content {
    uint64_t size = 0;
    std::vector<PagePtr> pages;  // ceil(size / kPageBytes) of them; bytes past `size` are zero
  };
  // Changes to one directory's entries since its last fsync: remove `removed` (when set), then make
  // `added` name `ino` (when set). A rename within the directory is one change, so it is atomic.
  struct DirChange {
    std::string removed;
    std::string added;
    uint64_t ino = 0;
  };
  struct Node {
    uint64_t ino = 0;
    bool is_dir = false;
    uint32_t mode = 0;
    int64_t mtime_ns = 0;
    int64_t ctime_ns = 0;
    // Files.
    Content live;
    Content durable;
    std::set<uint64_t> dirty;  // pages changed since the last fsync
    bool length_dirty = false;
    // Directories.
    std::map<std::string, uint64_t> entries;
    std::map<std::string, uint64_t> durable_entries;
    std::vector<DirChange> changes;
    // The live name, for paths: the directory and name it was last linked under.
    uint64_t parent = 0;
    std::string name;
    // What keeps the node: names in live and durable directories, kernel lookups and opens.
    uint32_t live_links = 0;
    uint32_t durable_links = 0;
    uint64_t lookups = 0;
    uint64_t opens = 0;
  };

  Node* find(uint64_t ino);
  const Node* find(uint64_t ino) const;
  Node* child(Node& dir, const std::string& name);
  NodeAttr attr_of(const Node& node) const;
  Node& new_node(bool is_dir, uint32_t mode);
  void link(Node& dir, const std::string& name, Node& node);
  // Drops one live link; frees the node when nothing holds it any more.
  void unlink_live(Node& node);
  void set_durable_entries(Node& dir, std::map<std::string, uint64_t> entries);
  void maybe_free(uint64_t ino);
  std::string path_locked(const Node& node) const;
  int take_fault(FaultOp op, const Node& node);
  void write_locked(Node& node, uint64_t offset, std::string_view data);
  void resize_locked(Node& node, uint64_t size);
  Page& writable_page(Node& node, uint64_t index);
  int64_t now_ns();

  // The cut, in steps (powercut_cut.cc).
  std::map<uint64_t, std::map<std::string, uint64_t>> surviving_entries(CutMode mode, std::mt19937_64& rng,
                                                                         CutReport& report);
  // `first_changed` receives the first byte that differs from what the last fsync left, if any.
  Content surviving_content(const Node& node, CutMode mode, std::mt19937_64& rng, CutReport& report,
                            std::optional<uint64_t>& first_changed);

  mutable std::mutex mu_;
  std::map<uint64_t, std::unique_ptr<Node>> nodes_;
  uint64_t next_ino_ = kRootIno;
  bool powered_ = true;
  std::vector<Fault> faults_;
  uint64_t fsyncs_ = 0;
  uint64_t faults_injected_ = 0;
  int64_t last_time_ns_ = 0;
};

}  // namespace streamd::powercut
