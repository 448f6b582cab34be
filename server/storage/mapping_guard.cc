#include "server/storage/mapping_guard.h"

#include <setjmp.h>
#include <signal.h>

#include <atomic>
#include <mutex>

namespace streamd::mapping_guard_detail {
namespace {

// The recovery point of the guarded code this thread is running, if any. SIGBUS from a memory access
// is delivered to the thread that made it, so a thread-local is exactly the right scope; initial-exec,
// so that reading it from the handler never allocates.
[[gnu::tls_model("initial-exec")]] thread_local sigjmp_buf* t_recovery = nullptr;
struct sigaction g_previous;

void on_sigbus(int sig, siginfo_t* info, void* ucontext) {
  if (sigjmp_buf* recovery = t_recovery) siglongjmp(*recovery, 1);
  // Not a guarded access: whatever handled SIGBUS before (a sanitizer's report, say) handles it.
  if ((g_previous.sa_flags & SA_SIGINFO) != 0 && g_previous.sa_sigaction != nullptr) {
    g_previous.sa_sigaction(sig, info, ucontext);
    return;
  }
  if ((g_previous.sa_flags & SA_SIGINFO) == 0 && g_previous.sa_handler != SIG_DFL &&
      g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
    return;
  }
  // Returning re-runs the faulting access, which now ends the process with SIGBUS as it always did.
  signal(SIGBUS, SIG_DFL);
}

void install_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa = {};
    sa.sa_sigaction = on_sigbus;
    // SA_NODEFER: SIGBUS stays unblocked while the handler runs, so leaving it by siglongjmp (which
    // here does not restore a signal mask, to keep the guard free of system calls) leaves the mask as
    // it was. SA_ONSTACK: a thread with an alternate signal stack uses it.
    sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &g_previous);
  });
}

}  // namespace

bool run(void (*fn)(void*), void* context) {
  install_once();
  sigjmp_buf* const outer = t_recovery;  // a guard inside a guard answers for its own accesses
  sigjmp_buf recovery;
  if (sigsetjmp(recovery, 0) != 0) {
    t_recovery = outer;
    return false;
  }
  t_recovery = &recovery;
  // The compiler must not move the guarded accesses outside the window the handler sees.
  std::atomic_signal_fence(std::memory_order_seq_cst);
  fn(context);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  t_recovery = outer;
  return true;
}

}  // namespace streamd::mapping_guard_detail
