// spdlog's registry is built by whatever logs first. The daemon sets its logging up in main() before any
// other thread starts (server/logging.h); a test that opens brokers does not, and a broker's own thread
// (the postgres engine's listener, say) may log first while the test's thread logs too. libspdlog is not
// built with ThreadSanitizer, so the sanitizer cannot see the registry's one-time initialisation being
// waited for and reports a race between the two. Built here, before main(), as the daemon does.
#include <spdlog/spdlog.h>

namespace {

[[maybe_unused]] const bool kRegistryBuilt = spdlog::default_logger_raw() != nullptr;

}  // namespace
