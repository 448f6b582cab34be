// The few cryptographic primitives authentication needs, over OpenSSL's libcrypto: SHA-256/512,
// HMAC, PBKDF2 (SCRAM's Hi), a comparison whose time does not depend on the bytes, random bytes, and
// the base64 and hex codings the access file and SCRAM messages use. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace streamd::auth {

enum class Digest { kSha256, kSha512 };

// Bytes in a digest of `d`: 32 or 64.
size_t digest_size(Digest d);

// The digest of `data`, as raw bytes.
std::string hash(Digest d, std::string_view data);
std::string hmac(Digest d, std::string_view key, std::string_view data);
// PBKDF2 with HMAC-`d` (RFC 8018), digest_size(d) bytes: SCRAM's Hi(password, salt, iterations).
std::string pbkdf2(Digest d, std::string_view password, std::string_view salt, uint32_t iterations);

// Equal in a time that depends only on the lengths.
bool same_bytes(std::string_view a, std::string_view b);

// `n` bytes from the operating system's random source.
std::string random_bytes(size_t n);

std::string base64_encode(std::string_view bytes);
// nullopt for anything but canonical, padded base64.
std::optional<std::string> base64_decode(std::string_view text);
std::string hex_encode(std::string_view bytes);
// nullopt for an odd length or a character outside [0-9a-fA-F].
std::optional<std::string> hex_decode(std::string_view text);

}  // namespace streamd::auth
