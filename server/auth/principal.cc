#include "server/auth/principal.h"

namespace streamd::auth {

Principal Principal::unrestricted() { return Principal(); }

Principal Principal::anonymous(std::shared_ptr<const AccessTable> table) {
  Principal p = of(std::move(table), std::string(kAnonymous), nullptr);
  p.anonymous_ = true;
  return p;
}

Principal Principal::of(std::shared_ptr<const AccessTable> table, std::string name, const PrincipalEntry* entry) {
  Principal p;
  p.table_ = std::move(table);
  p.name_ = std::move(name);
  p.entry_ = entry;
  return p;
}

bool Principal::allows(Right right, std::string_view stream) const {
  if (!restricted()) return true;
  if (entry_ == nullptr) return false;
  for (const Grant& g : entry_->grants) {
    if (g.rights.has(right) && g.pattern.matches(stream)) return true;
  }
  return false;
}

bool Principal::allows_any(std::string_view stream) const {
  return allows(Right::kRead, stream) || allows(Right::kWrite, stream) || allows(Right::kAdmin, stream);
}

bool Principal::holds_anywhere(Right right) const {
  if (!restricted()) return true;
  if (entry_ == nullptr) return false;
  for (const Grant& g : entry_->grants) {
    if (g.rights.has(right)) return true;
  }
  return false;
}

bool Principal::holds_everywhere(Right right) const {
  if (!restricted()) return true;
  if (entry_ == nullptr) return false;
  for (const Grant& g : entry_->grants) {
    if (g.rights.has(right) && g.pattern.covers_all()) return true;
  }
  return false;
}

}  // namespace streamd::auth
