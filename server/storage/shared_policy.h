// SharedPolicy: a stream's policy where it may change while any thread reads it (docs/SEMANTICS.md §3
// says which fields change and when they take effect). A reader takes a copy — a Policy is a few
// words — so no reader holds a reference that a change could tear, and a change replaces the whole
// policy at once: a reader sees the old policy or the new one, never a mix.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <mutex>

#include "server/storage/policy.h"

namespace streamd {

class SharedPolicy {
 public:
  explicit SharedPolicy(const Policy& policy) : policy_(policy) {}
  SharedPolicy(const SharedPolicy&) = delete;
  SharedPolicy& operator=(const SharedPolicy&) = delete;

  Policy get() const {
    std::lock_guard lock(mu_);
    return policy_;
  }
  void set(const Policy& policy) {
    std::lock_guard lock(mu_);
    policy_ = policy;
  }

 private:
  mutable std::mutex mu_;
  Policy policy_;
};

}  // namespace streamd
