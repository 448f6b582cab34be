// Touching a file's pages through a memory mapping without dying when the disk cannot give them.
//
// A mapped page the kernel has to read in and cannot — the device answered EIO, or the file became
// shorter than the mapping — raises SIGBUS in the thread that touched it, and by default that ends the
// process. The sparse indexes are mapped (index_file.h), so a failing disk under one index page would
// take the whole broker down with it, where a failing log page fails one read (segment.cc reads the log
// with pread). guard_mapping() runs a piece of code that touches mapped memory so that a SIGBUS inside
// it returns false instead: the caller treats that index as unusable and falls back to the log.
//
// The guarded code is left by siglongjmp, so it must hold nothing that needs destroying: plain loads
// and stores of mapped memory and of trivially destructible values only (no allocation, no locks).
// A SIGBUS anywhere else keeps its usual effect: the handler that was installed before runs, or the
// process ends with the signal, as without this guard.
#pragma once

#include <type_traits>

namespace streamd {

namespace mapping_guard_detail {
bool run(void (*fn)(void*), void* context);
}  // namespace mapping_guard_detail

// Runs f(); false when touching a mapped page inside it raised SIGBUS, which ended f() there.
template <typename F>
bool guard_mapping(F&& f) {
  return mapping_guard_detail::run([](void* p) { (*static_cast<std::remove_reference_t<F>*>(p))(); }, &f);
}

}  // namespace streamd
