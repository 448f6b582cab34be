// Decompression of the record sets inside compressed Kafka batches: gzip (zlib), snappy (raw, or in
// the xerial framing the Java client writes), lz4 (the LZ4 frame format) and zstd, with Debian's
// libraries. Only the broker's read side: answers go out uncompressed (docs/KAFKA.md §Compression).
// Pure functions over bytes, thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace streamd::kafka {

// The batch attributes' compression bits.
enum class Compression : uint8_t { kNone = 0, kGzip = 1, kSnappy = 2, kLz4 = 3, kZstd = 4 };

std::string_view compression_name(Compression c);

// Appends the inflated bytes of `in` to `out`. False (with `reason`) when the codec is unknown, the
// input is damaged, or the output would pass `max_out` bytes (a decompression bomb stops there).
bool decompress(Compression codec, std::string_view in, size_t max_out, std::string& out, std::string& reason);

}  // namespace streamd::kafka
