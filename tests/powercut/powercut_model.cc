// The live side of PowerCutModel: namespace and data operations, fsync, faults and node lifetime. The
// cut itself is in powercut_cut.cc.
#include "tests/powercut/powercut_model.h"

#include <linux/fs.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace streamd::powercut {

PowerCutModel::PowerCutModel() {
  Node& root = new_node(true, 0755);
  root.live_links = 1;  // held by the mount itself
  root.durable_links = 1;
}

int64_t PowerCutModel::now_ns() {
  const int64_t t =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  last_time_ns_ = std::max(t, last_time_ns_ + 1);
  return last_time_ns_;
}

PowerCutModel::Node& PowerCutModel::new_node(bool is_dir, uint32_t mode) {
  auto node = std::make_unique<Node>();
  node->ino = next_ino_++;
  node->is_dir = is_dir;
  node->mode = mode & 07777;
  node->mtime_ns = node->ctime_ns = now_ns();
  Node& ref = *node;
  nodes_.emplace(ref.ino, std::move(node));
  return ref;
}

PowerCutModel::Node* PowerCutModel::find(uint64_t ino) {
  auto it = nodes_.find(ino);
  return it == nodes_.end() ? nullptr : it->second.get();
}

const PowerCutModel::Node* PowerCutModel::find(uint64_t ino) const {
  auto it = nodes_.find(ino);
  return it == nodes_.end() ? nullptr : it->second.get();
}

PowerCutModel::Node* PowerCutModel::child(Node& dir, const std::string& name) {
  auto it = dir.entries.find(name);
  return it == dir.entries.end() ? nullptr : find(it->second);
}

NodeAttr PowerCutModel::attr_of(const Node& node) const {
  NodeAttr a;
  a.ino = node.ino;
  a.is_dir = node.is_dir;
  a.mode = node.mode;
  a.size = node.is_dir ? kPageBytes : node.live.size;
  if (node.is_dir) {
    a.nlink = 2;
    for (const auto& [name, ino] : node.entries) {
      const Node* c = find(ino);
      if (c != nullptr && c->is_dir) ++a.nlink;
    }
  } else {
    a.nlink = node.live_links;
  }
  a.mtime_ns = node.mtime_ns;
  a.ctime_ns = node.ctime_ns;
  return a;
}

void PowerCutModel::link(Node& dir, const std::string& name, Node& node) {
  dir.entries[name] = node.ino;
  dir.changes.push_back({"", name, node.ino});
  dir.mtime_ns = dir.ctime_ns = now_ns();
  node.parent = dir.ino;
  node.name = name;
  ++node.live_links;
}

void PowerCutModel::unlink_live(Node& node) {
  --node.live_links;
  if (node.live_links == 0) node.parent = 0;
  maybe_free(node.ino);
}

void PowerCutModel::set_durable_entries(Node& dir, std::map<std::string, uint64_t> entries) {
  std::vector<uint64_t> released;
  for (const auto& [name, ino] : dir.durable_entries) {
    if (Node* n = find(ino)) {
      --n->durable_links;
      released.push_back(ino);
    }
  }
  for (const auto& [name, ino] : entries) {
    if (Node* n = find(ino)) ++n->durable_links;
  }
  dir.durable_entries = std::move(entries);
  for (uint64_t ino : released) maybe_free(ino);
}

void PowerCutModel::maybe_free(uint64_t ino) {
  Node* node = find(ino);
  if (node == nullptr || ino == kRootIno) return;
  if (node->live_links > 0 || node->durable_links > 0 || node->lookups > 0 || node->opens > 0) return;
  std::map<std::string, uint64_t> named = std::move(node->durable_entries);
  nodes_.erase(ino);
  for (const auto& [name, child_ino] : named) {
    if (Node* c = find(child_ino)) {
      --c->durable_links;
      maybe_free(child_ino);
    }
  }
}

std::string PowerCutModel::path_locked(const Node& node) const {
  std::vector<const Node*> chain;
  for (const Node* n = &node; n != nullptr && n->ino != kRootIno; n = find(n->parent)) {
    if (n->parent == 0) return "";
    chain.push_back(n);
  }
  std::string path;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    if (!path.empty()) path += '/';
    path += (*it)->name;
  }
  return path;
}

std::string PowerCutModel::path_of(uint64_t ino) const {
  std::lock_guard lock(mu_);
  const Node* n = find(ino);
  return n == nullptr ? "" : path_locked(*n);
}

int PowerCutModel::take_fault(FaultOp op, const Node& node) {
  for (auto it = faults_.begin(); it != faults_.end(); ++it) {
    if (it->op != op || path_locked(node).find(it->path_contains) == std::string::npos) continue;
    const int err = it->err;
    if (it->count > 0 && --it->count == 0) faults_.erase(it);
    ++faults_injected_;
    return err;
  }
  return 0;
}

int PowerCutModel::lookup(uint64_t parent, const std::string& name, NodeAttr& out) {
  std::lock_guard lock(mu_);
  if (!powered_) return EIO;
  Node* dir = find(parent);
  if (dir == nullptr) return ENOENT;
  if (!dir->is_dir) return ENOTDIR;
  Node* c = child(*dir, name);
  if (c == nullptr) return ENOENT;
  ++c->lookups;
  out = attr_of(*c);
  return 0;
}

int PowerCutModel::getattr(uint64_t ino, NodeAttr& out) {
  std::lock_guard lock(mu_);
  if (!powered_) return EIO;
  const Node* n = find(ino);
  if (n == nullptr) return ENOENT;
  out = attr_of(*n);
  return 0;
}

int PowerCutModel::create(uint64_t parent, const std::string& name, uint32_t mode, bool exclusive, NodeAttr& out) {
  std::lock_guard lock(mu_);
  if (!powered_) return EIO;
  Node* dir = find(parent);
  if (dir == nullptr) return ENOENT;
  if (!dir->is_dir) return ENOTDIR;
  Node* existing = child(*dir, name);
  if (existing != nullptr) {
    if (exclusive) return EEXIST;
    if (existing->is_dir) return EISDIR;
    ++existing->lookups;
    out = attr_of(*existing);
    return 0;
  }
  Node& node = new_node(false, mode);
  link(*dir, name, node);
  ++node.lookups;
  out = attr_of(node);
  return 0;
}

int PowerCutModel::mkdir(uint64_t parent, const std::string& name, uint32_t mode, NodeAttr& out) {
  std::lock_guard lock(mu_);
  if (!powered_) return EIO;
  Node* dir = find(parent);
  if (dir == nullptr) return ENOENT;
  if (!dir->is_dir) return ENOTDIR;
  if (child(*dir, name) != nullptr) return EEXIST;
  Node& node = new_node(true, mode);
  link(*dir, name, node);
  ++node.lookups;
  out = attr_of(node);
  return 0;
}

int PowerCutModel::unlink(uint64_t parent, const std::string& name) {
  std::lock_guard lock(mu_);
  if (!powered_) return EIO;
  Node* dir = find(parent);
  if (dir == nullptr || !dir->is_dir) return ENOTDIR;
  Node* c = child(*dir, name);
  if (c == nullptr) return ENOENT;
  if (c->is_dir) return EISDIR;
  dir->entries.erase(name);
  dir->changes.push_back({name, "", 0});
  dir->mtime_ns = dir->ctime_ns = now_ns();
  unlink_live(*c);
  return 0;
}

int PowerCutModel::rmdir(uint64_t parent, const std::string& name) {
  std::lock_guard lock(mu_);
  if (!powered_) return EIO;
  Node* dir = find(parent);
  if (dir == nullptr || !dir->is_dir) return ENOTDIR;
  Node* c = child(*dir, name);
  if (c == nullptr) return ENOENT;
  if (!c->is_dir) return ENOTDIR;
  if (!c->entries.empty()) return ENOTEMPTY;
  dir->entries.erase(name);
  dir->changes.push_back({name, "", 0});
  dir->mtime_ns = dir->ctime_ns = now_ns();
  unlink_live(*c);
  return 0;
}

int PowerCutModel::rename(uint64_t parent, const std::string& name, uint64_t new_parent, const std::string& new_name,
                          unsigned flags) {
  std::lock_guard lock(mu_);
  if (!powered_) return EIO;
  if ((flags & ~static_cast<unsigned>(RENAME_NOREPLACE)) != 0) return EINVAL;
  Node* from_dir = find(parent);
  Node* to_dir = find(new_parent);
  if (from_dir == nullptr || to_dir == nullptr || !from_dir->is_dir || !to_dir->is_dir) return ENOTDIR;
  Node* node = child(*from_dir, name);
  if (node == nullptr) return ENOENT;
  Node* target = child(*to_dir, new_name);
  if (target == node) return 0;
  if (target != nullptr) {
    if ((flags & RENAME_NOREPLACE) != 0) return EEXIST;
    if (node->is_dir && !target->is_dir) return ENOTDIR;
    if (!node->is_dir && target->is_dir) return EISDIR;
    if (target->is_dir && !target->entries.empty()) return ENOTEMPTY;
  }
  if (node->is_dir) {
    // A directory cannot move below itself.
    for (const Node* d = to_dir; d != nullptr && d->ino != kRootIno; d = find(d->parent)) {
      if (d == node) return EINVAL;
    }
  }
  from_dir->entries.erase(name);
  to_dir->entries[new_name] = node->ino;
  if (from_dir == to_dir) {
    from_dir->changes.push_back({name, new_name, node->ino});
  } else {
    from_dir->changes.push_back({name, "", 0});
    to_dir->changes.push_back({"", new_name, node->ino});
  }
  from_dir->mtime_ns = to_dir->mtime_ns = node->ctime_ns = now_ns();
  node->parent = to_dir->ino;
  node->name = new_name;
  if (target != nullptr) unlink_live(*target);
  return 0;
}

int PowerCutModel::readdir(uint64_t ino, std::vector<DirEntry>& out) {
  std::lock_guard lock(mu_);
  if (!powered_) return EIO;
  Node* dir = find(ino);
  if (dir == nullptr) return ENOENT;
  if (!dir->is_dir) return ENOTDIR;
  out.clear();
  for (const auto& [name, child_ino] : dir->entries) {
    const Node* c = find(child_ino);
    out.push_back({name, child_ino, c != nullptr && c->is_dir});
  }
  return 0;
}

PowerCutModel::Page& PowerCutModel::writable_page(Node& node, uint64_t index) {
  PagePtr& page = node.live.pages[index];
  if (page == nullptr) {
    page = std::make_shared<Page>();
    page->fill('\0');
  } else if (page.use_count() > 1) {
    page = std::make_shared<Page>(*page);  // copy on write: the durable side keeps the old bytes
  }
  node.dirty.insert(index);
  return *page;
}

void PowerCutModel::resize_locked(Node& node, uint64_t size) {
  if (size == node.live.size) return;
  const size_t pages = static_cast<size_t>((size + kPageBytes - 1) / kPageBytes);
  if (size < node.live.size) {
    node.live.pages.resize(pages);
    const size_t tail = static_cast<size_t>(size % kPageBytes);
    if (tail != 0 && node.live.pages.back() != nullptr) {
      Page& last = writable_page(node, pages - 1);
      std::memset(last.data() + tail, 0, kPageBytes - tail);
    }
  } else {
    node.live.pages.resize(pages);  // new pages are holes; the old last page's tail is already zero
  }
  node.live.size = size;
  node.length_dirty = true;
}

void PowerCutModel::write_locked(Node& node, uint64_t offset, std::string_view data) {
  if (data.empty()) return;
  const uint64_t end = offset + data.size();
  if (end > node.live.size) resize_locked(node, end);
  uint64_t pos = offset;
  while (pos < end) {
    const uint64_t index = pos / kPageBytes;
    const size_t in_page = static_cast<size_t>(pos % kPageBytes);
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kPageBytes - in_page, end - pos));
    Page& page = writable_page(node, index);
    std::memcpy(page.data() + in_page, data.data() + (pos - offset), n);
    pos += n;
  }
  node.mtime_ns = node.ctime_ns = now_ns();
}

int PowerCutModel::setattr(uint64_t ino, const uint64_t* size, const uint32_t* mode, const int64_t* mtime_ns,
                           NodeAttr& out) {
  std::lock_guard lock(mu_);
  if (!powered_) return EIO;
  Node* node = find(ino);
  if (node == nullptr) return ENOENT;
  if (size != nullptr) {
    if (node->is_dir) return EISDIR;
    if (int err = take_fault(FaultOp::kWrite, *node)) return err;
    resize_locked(*node, *size);
    node->mtime_ns = now_ns();
  }
  if (mode != nullptr) node->mode = *mode & 07777;
  if (mtime_ns != nullptr) node->mtime_ns = *mtime_ns;
  node->ctime_ns = now_ns();
  out = attr_of(*node);
  return 0;
}

int PowerCutModel::write(uint64_t ino, uint64_t offset, std::string_view data) {
  std::lock_guard lock(mu_);
  if (!powered_) return EIO;
  Node* node = find(ino);
  if (node == nullptr) return ENOENT;
  if (node->is_dir) return EISDIR;
  if (int err = take_fault(FaultOp::kWrite, *node)) return err;
  write_locked(*node, offset, data);
  return 0;
}

int PowerCutModel::read(uint64_t ino, uint64_t offset, size_t length, std::string& out) {
  std::lock_guard lock(mu_);
  if (!powered_) return EIO;
  Node* node = find(ino);
  if (node == nullptr) return ENOENT;
  if (node->is_dir) return EISDIR;
  if (int err = take_fault(FaultOp::kRead, *node)) return err;
  out.clear();
  if (offset >= node->live.size) return 0;
  const uint64_t end = std::min<uint64_t>(node->live.size, offset + length);
  out.resize(static_cast<size_t>(end - offset));
  for (uint64_t pos = offset; pos < end;) {
    const uint64_t index = pos / kPageBytes;
    const size_t in_page = static_cast<size_t>(pos % kPageBytes);
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kPageBytes - in_page, end - pos));
    const PagePtr& page = node->live.pages[index];
    char* dst = out.data() + (pos - offset);
    if (page == nullptr) {
      std::memset(dst, 0, n);
    } else {
      std::memcpy(dst, page->data() + in_page, n);
    }
    pos += n;
  }
  return 0;
}

int PowerCutModel::fsync(uint64_t ino) {
  std::lock_guard lock(mu_);
  if (!powered_) return EIO;
  Node* node = find(ino);
  if (node == nullptr) return ENOENT;
  if (int err = take_fault(FaultOp::kFsync, *node)) {
    // Like Linux after a writeback error: the pages stay as readers see them, but no later fsync
    // writes them; the new length is still written by the next one.
    node->dirty.clear();
    return err;
  }
  ++fsyncs_;
  if (node->is_dir) {
    set_durable_entries(*node, node->entries);
    node->changes.clear();
    return 0;
  }
  Content& durable = node->durable;
  durable.pages.resize(node->live.pages.size());
  for (uint64_t index : node->dirty) {
    if (index < node->live.pages.size()) durable.pages[index] = node->live.pages[index];
  }
  durable.size = node->live.size;
  node->dirty.clear();
  node->length_dirty = false;
  return 0;
}

void PowerCutModel::forget(uint64_t ino, uint64_t lookups) {
  std::lock_guard lock(mu_);
  if (!powered_) return;  // the cut reset every kernel reference
  Node* node = find(ino);
  if (node == nullptr) return;
  node->lookups -= std::min(node->lookups, lookups);
  maybe_free(ino);
}

int PowerCutModel::open(uint64_t ino) {
  std::lock_guard lock(mu_);
  if (!powered_) return EIO;
  Node* node = find(ino);
  if (node == nullptr) return ENOENT;
  ++node->opens;
  return 0;
}

void PowerCutModel::release(uint64_t ino) {
  std::lock_guard lock(mu_);
  if (!powered_) return;
  Node* node = find(ino);
  if (node == nullptr) return;
  if (node->opens > 0) --node->opens;
  maybe_free(ino);
}

bool PowerCutModel::powered() const {
  std::lock_guard lock(mu_);
  return powered_;
}

void PowerCutModel::add_fault(Fault fault) {
  std::lock_guard lock(mu_);
  faults_.push_back(std::move(fault));
}

void PowerCutModel::clear_faults() {
  std::lock_guard lock(mu_);
  faults_.clear();
}

std::vector<uint64_t> PowerCutModel::files_matching(const std::string& path_contains) const {
  std::lock_guard lock(mu_);
  std::vector<uint64_t> out;
  for (const auto& [ino, node] : nodes_) {
    if (!node->is_dir && path_locked(*node).find(path_contains) != std::string::npos) out.push_back(ino);
  }
  return out;
}

uint64_t PowerCutModel::fsyncs() const {
  std::lock_guard lock(mu_);
  return fsyncs_;
}

uint64_t PowerCutModel::faults_injected() const {
  std::lock_guard lock(mu_);
  return faults_injected_;
}

size_t PowerCutModel::nodes() const {
  std::lock_guard lock(mu_);
  return nodes_.size();
}

}  // namespace streamd::powercut
