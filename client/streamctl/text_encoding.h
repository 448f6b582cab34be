// Byte-to-text helpers for streamctl's output: UTF-8 validation (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF) and base64 (RFC 4648, standard alphabet, padded). Pure
// functions, safe from any thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace streamd::streamctl {

// Length (1–4) of the valid UTF-8 sequence that starts `bytes`, 0 when it does not start with one.
size_t utf8_sequence_length(std::string_view bytes);
bool is_valid_utf8(std::string_view bytes);

std::string base64_encode(std::string_view bytes);
// nullopt for anything that is not padded standard base64.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace streamd::streamctl
