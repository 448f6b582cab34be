// MeteredFileSystem: a FileSystem decorator (server/storage/file_system.h) that measures what the
// storage layer does at the operating-system seam, for /metrics, without the storage code knowing:
//  - every fdatasync of a partition log (a `.log` file) or of the journal (`.journal`): count and
//    latency histogram;
//  - group commit: how many record batches each such sync made durable (batch headers are counted in
//    the bytes written to the file since its previous sync; see docs/FORMAT.md for the layout). A
//    checkpoint's sync of a segment counts the batches the journal made durable before it.
// Other files (indexes, offsets, metadata) pass through unmeasured. Thread-safe as the wrapped
// FileSystem is; a File is used by one writer at a time, as the interface requires.
#pragma once

#include <memory>

#include "server/metrics/metrics.h"
#include "server/storage/file_system.h"

namespace streamd {

std::unique_ptr<FileSystem> metered_file_system(FileSystem& inner, MetricsRegistry& registry);

}  // namespace streamd
