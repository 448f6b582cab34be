#include "server/auth/crypto.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <stdexcept>

namespace streamd::auth {
namespace {

const EVP_MD* md(Digest d) { return d == Digest::kSha256 ? EVP_sha256() : EVP_sha512(); }

const unsigned char* bytes_of(std::string_view s) { return reinterpret_cast<const unsigned char*>(s.data()); }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

size_t digest_size(Digest d) { return d == Digest::kSha256 ? 32 : 64; }

std::string hash(Digest d, std::string_view data) {
  std::string out(digest_size(d), '\0');
  unsigned int n = 0;
  EVP_Digest(data.data(), data.size(), reinterpret_cast<unsigned char*>(out.data()), &n, md(d), nullptr);
  return out;
}

std::string hmac(Digest d, std::string_view key, std::string_view data) {
  std::string out(digest_size(d), '\0');
  unsigned int n = 0;
  HMAC(md(d), key.data(), static_cast<int>(key.size()), bytes_of(data), data.size(),
       reinterpret_cast<unsigned char*>(out.data()), &n);
  return out;
}

std::string pbkdf2(Digest d, std::string_view password, std::string_view salt, uint32_t iterations) {
  std::string out(digest_size(d), '\0');
  PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()), bytes_of(salt),
                    static_cast<int>(salt.size()), static_cast<int>(iterations), md(d),
                    static_cast<int>(out.size()), reinterpret_cast<unsigned char*>(out.data()));
  return out;
}

bool same_bytes(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string random_bytes(size_t n) {
  std::string out(n, '\0');
  // Only a broken random source fails; nothing that depends on secrecy may go on without one.
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1)
    throw std::runtime_error("the random source failed (RAND_bytes)");
  return out;
}

std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), bytes_of(bytes),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()), bytes_of(text),
                                static_cast<int>(text.size()));
  if (n < 0) return std::nullopt;
  // EVP_DecodeBlock counts the padding as zero bytes.
  size_t len = static_cast<size_t>(n);
  if (!text.empty() && text.back() == '=') --len;
  if (text.size() >= 2 && text[text.size() - 2] == '=') --len;
  out.resize(len);
  // Refuse spellings that decode but are not what encoding gives back (stray whitespace, bits).
  if (base64_encode(out) != text) return std::nullopt;
  return out;
}

std::string hex_encode(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    out += kDigits[b >> 4];
    out += kDigits[b & 0xf];
  }
  return out;
}

std::optional<std::string> hex_decode(std::string_view text) {
  if (text.size() % 2 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 2);
  for (size_t i = 0; i < text.size(); i += 2) {
    const int hi = hex_value(text[i]);
    const int lo = hex_value(text[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
  }
  return out;
}

}  // namespace streamd::auth
