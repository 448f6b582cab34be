// PowerCutModel::cut and restore: what the simulated disk holds once the power fails (the failure model
// in powercut_model.h and docs/RELIABILITY.md).
#include <algorithm>
#include <cstring>
#include <deque>
#include <tuple>

#include "tests/powercut/powercut_model.h"

namespace streamd::powercut {
namespace {

size_t pages_for(uint64_t size) { return static_cast<size_t>((size + kPageBytes - 1) / kPageBytes); }

}  // namespace

std::map<uint64_t, std::map<std::string, uint64_t>> PowerCutModel::surviving_entries(CutMode mode,
                                                                                     std::mt19937_64& rng,
                                                                                     CutReport& report) {
  std::map<uint64_t, std::map<std::string, uint64_t>> out;
  for (const auto& [ino, node] : nodes_) {
    if (!node->is_dir) continue;
    std::map<std::string, uint64_t> entries = node->durable_entries;
    const size_t pending = node->changes.size();
    // A journal commits a directory's changes in the order they were made: some prefix reached it.
    const size_t kept = mode == CutMode::kTorn ? static_cast<size_t>(rng() % (pending + 1)) : 0;
    for (size_t i = 0; i < kept; ++i) {
      const DirChange& c = node->changes[i];
      if (!c.removed.empty()) entries.erase(c.removed);
      if (!c.added.empty()) entries[c.added] = c.ino;
    }
    report.dir_changes_unsynced += pending;
    report.dir_changes_kept += kept;
    out.emplace(ino, std::move(entries));
  }
  return out;
}

PowerCutModel::Content PowerCutModel::surviving_content(const Node& node, CutMode mode, std::mt19937_64& rng,
                                                        CutReport& report,
                                                        std::optional<uint64_t>& first_changed) {
  first_changed.reset();
  Content out = node.durable;
  if (node.dirty.empty() && !node.length_dirty) return out;
  ++report.files_unsynced;
  const uint64_t size = mode == CutMode::kTorn && node.length_dirty && (rng() & 1) != 0 ? node.live.size
                                                                                         : node.durable.size;
  out.size = size;
  out.pages.resize(pages_for(size));
  for (uint64_t index : node.dirty) {
    if (index >= out.pages.size()) continue;
    ++report.pages_unsynced;
    if (mode == CutMode::kDiscard) continue;
    const PagePtr newer = index < node.live.pages.size() ? node.live.pages[index] : nullptr;
    const PagePtr older = index < node.durable.pages.size() ? node.durable.pages[index] : nullptr;
    switch (rng() % 3) {
      case 0:  // never written back
        out.pages[index] = older;
        break;
      case 1:  // written back whole
        out.pages[index] = newer;
        ++report.pages_kept;
        break;
      default: {  // the power went while the page was being written: each sector old or new
        auto page = std::make_shared<Page>();
        for (size_t s = 0; s < kPageBytes; s += kSectorBytes) {
          const PagePtr& from = (rng() & 1) != 0 ? newer : older;
          if (from == nullptr) {
            std::memset(page->data() + s, 0, kSectorBytes);
          } else {
            std::memcpy(page->data() + s, from->data() + s, kSectorBytes);
          }
        }
        out.pages[index] = std::move(page);
        ++report.pages_torn;
      }
    }
  }
  // Bytes past the length read as zero when the file grows again.
  const size_t tail = static_cast<size_t>(size % kPageBytes);
  if (tail != 0 && out.pages.back() != nullptr) {
    auto last = std::make_shared<Page>(*out.pages.back());
    std::memset(last->data() + tail, 0, kPageBytes - tail);
    out.pages.back() = std::move(last);
  }
  // Where this first differs from what the last fsync left.
  const Content& synced = node.durable;
  static const Page zeros{};
  const uint64_t common = std::min(out.size, synced.size);
  for (size_t i = 0; i < out.pages.size() && i * kPageBytes < common && !first_changed; ++i) {
    const PagePtr& a = out.pages[i];
    const PagePtr b = i < synced.pages.size() ? synced.pages[i] : nullptr;
    if (a == b) continue;
    const char* x = a ? a->data() : zeros.data();
    const char* y = b ? b->data() : zeros.data();
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kPageBytes, common - i * kPageBytes));
    const size_t at = static_cast<size_t>(std::mismatch(x, x + n, y).first - x);
    if (at < n) first_changed = i * kPageBytes + at;
  }
  if (!first_changed && out.size != synced.size) first_changed = common;
  return out;
}

CutReport PowerCutModel::cut(CutMode mode, uint64_t seed) {
  std::lock_guard lock(mu_);
  CutReport report;
  if (!powered_) return report;
  powered_ = false;
  faults_.clear();
  std::mt19937_64 rng(seed);
  auto entries = surviving_entries(mode, rng, report);

  // What the surviving directories reach, from the root, is what the disk holds.
  std::map<uint64_t, std::unique_ptr<Node>> kept;
  std::deque<std::tuple<uint64_t, uint64_t, std::string, std::string>> queue;  // ino, parent, name, path
  queue.emplace_back(kRootIno, 0, "", "");
  while (!queue.empty()) {
    auto [ino, parent, name, path] = std::move(queue.front());
    queue.pop_front();
    const Node* old = find(ino);
    if (old == nullptr || kept.count(ino) > 0) continue;
    auto node = std::make_unique<Node>();
    node->ino = ino;
    node->is_dir = old->is_dir;
    node->mode = old->mode;
    node->mtime_ns = old->mtime_ns;
    node->ctime_ns = old->ctime_ns;
    node->parent = parent;
    node->name = name;
    if (old->is_dir) {
      node->entries = entries[ino];
      for (const auto& [child_name, child_ino] : node->entries) {
        queue.emplace_back(child_ino, ino, child_name, path.empty() ? child_name : path + "/" + child_name);
      }
    } else {
      std::optional<uint64_t> first_changed;
      node->live = surviving_content(*old, mode, rng, report, first_changed);
      node->durable = node->live;
      if (!old->dirty.empty() || old->length_dirty) report.unsynced.insert(path);
      if (first_changed) report.partly_written.emplace(path, *first_changed);
    }
    kept.emplace(ino, std::move(node));
  }
  // Links as the new namespace has them; an entry naming a node that is gone is dropped.
  for (auto& [ino, node] : kept) {
    if (!node->is_dir) continue;
    for (auto it = node->entries.begin(); it != node->entries.end();) {
      auto c = kept.find(it->second);
      if (c == kept.end()) {
        it = node->entries.erase(it);
        continue;
      }
      ++c->second->live_links;
      ++c->second->durable_links;
      ++it;
    }
    node->durable_entries = node->entries;
  }
  Node& root = *kept.at(kRootIno);
  ++root.live_links;
  ++root.durable_links;
  nodes_ = std::move(kept);
  return report;
}

void PowerCutModel::restore() {
  std::lock_guard lock(mu_);
  powered_ = true;
}

}  // namespace streamd::powercut
