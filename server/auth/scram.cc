#include "server/auth/scram.h"

#include <charconv>
#include <vector>

namespace streamd::auth {
namespace {

constexpr size_t kServerNonceBytes = 24;

// Splits "a=1,b=2" into its attributes; values may hold '=' but not ','.
std::vector<std::string_view> split_commas(std::string_view text) {
  std::vector<std::string_view> parts;
  while (true) {
    const size_t comma = text.find(',');
    parts.push_back(text.substr(0, comma));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return parts;
}

// The value of "k=value", or nullopt when the attribute is not `k`.
std::optional<std::string_view> attribute(std::string_view part, char k) {
  if (part.size() < 2 || part[0] != k || part[1] != '=') return std::nullopt;
  return part.substr(2);
}

// saslname (RFC 5802 §5.1): "=2C" is ',', "=3D" is '=', any other '=' is malformed.
std::optional<std::string> decode_saslname(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '=') {
      out += text[i];
      continue;
    }
    const std::string_view esc = text.substr(i + 1, 2);
    if (esc == "2C") {
      out += ',';
    } else if (esc == "3D") {
      out += '=';
    } else {
      return std::nullopt;
    }
    i += 2;
  }
  if (out.empty()) return std::nullopt;
  return out;
}

std::string xor_bytes(std::string_view a, std::string_view b) {
  std::string out(a);
  for (size_t i = 0; i < out.size() && i < b.size(); ++i) out[i] = static_cast<char>(out[i] ^ b[i]);
  return out;
}

// A stand-in for a user with no credential, so that an unknown name fails at the proof exactly as a
// wrong password does: same messages, and a salt that stays the same for the same name.
ScramCredential decoy(ScramMechanism m, std::string_view user) {
  static const std::string secret = random_bytes(32);
  ScramCredential c;
  c.mechanism = m;
  c.salt = hmac(Digest::kSha256, secret, user).substr(0, 16);
  c.stored_key = random_bytes(digest_size(scram_digest(m)));
  c.server_key = random_bytes(digest_size(scram_digest(m)));
  return c;
}

ScramServer::Step failed(std::string reason) {
  ScramServer::Step s;
  s.state = ScramServer::State::kFailed;
  s.reason = std::move(reason);
  return s;
}

}  // namespace

std::string_view scram_mechanism_name(ScramMechanism m) {
  return m == ScramMechanism::kSha256 ? "SCRAM-SHA-256" : "SCRAM-SHA-512";
}

std::optional<ScramMechanism> parse_scram_mechanism(std::string_view name) {
  if (name == "SCRAM-SHA-256") return ScramMechanism::kSha256;
  if (name == "SCRAM-SHA-512") return ScramMechanism::kSha512;
  return std::nullopt;
}

Digest scram_digest(ScramMechanism m) { return m == ScramMechanism::kSha256 ? Digest::kSha256 : Digest::kSha512; }

ScramCredential make_scram_credential(ScramMechanism m, std::string_view password, std::string_view salt,
                                      uint32_t iterations) {
  const Digest d = scram_digest(m);
  const std::string salted = pbkdf2(d, password, salt, iterations);
  ScramCredential c;
  c.mechanism = m;
  c.iterations = iterations;
  c.salt = std::string(salt);
  c.stored_key = hash(d, hmac(d, salted, "Client Key"));
  c.server_key = hmac(d, salted, "Server Key");
  return c;
}

ScramServer::ScramServer(ScramMechanism mechanism, Lookup lookup, std::string server_nonce)
    : mechanism_(mechanism),
      lookup_(std::move(lookup)),
      server_nonce_(server_nonce.empty() ? base64_encode(random_bytes(kServerNonceBytes)) : std::move(server_nonce)) {}

ScramServer::Step ScramServer::step(std::string_view message) {
  switch (phase_) {
    case Phase::kFirst:
      phase_ = Phase::kFinal;
      return first(message);
    case Phase::kFinal:
      phase_ = Phase::kOver;
      return final(message);
    case Phase::kOver:
      break;
  }
  return failed("a SCRAM message after the exchange ended");
}

ScramServer::Step ScramServer::first(std::string_view message) {
  // gs2-header: gs2-cbind-flag "," [authzid] ","
  if (message.size() < 3) return failed("the client-first message is too short");
  const char flag = message[0];
  if (flag == 'p') return failed("the client asked for channel binding, which is not offered");
  if ((flag != 'n' && flag != 'y') || message[1] != ',') return failed("the client-first message has no gs2 header");
  const size_t header_end = message.find(',', 2);
  if (header_end == std::string_view::npos) return failed("the client-first message has no gs2 header");
  const std::string_view authzid = message.substr(2, header_end - 2);
  gs2_header_ = std::string(message.substr(0, header_end + 1));
  client_first_bare_ = std::string(message.substr(header_end + 1));
  const auto parts = split_commas(client_first_bare_);
  if (parts.size() < 2) return failed("the client-first message lacks n= or r=");
  const auto name = attribute(parts[0], 'n');
  const auto client_nonce = attribute(parts[1], 'r');
  if (!name || !client_nonce || client_nonce->empty()) return failed("the client-first message lacks n= or r=");
  for (size_t i = 2; i < parts.size(); ++i) {
    // Extensions: "tokenauth" would ask for delegation tokens, and "m=" is mandatory by definition.
    if (attribute(parts[i], 'm') || parts[i].starts_with("tokenauth"))
      return failed("the client-first message asks for an extension that is not offered");
  }
  const auto user = decode_saslname(*name);
  if (!user) return failed("the user name is not a valid saslname");
  user_ = *user;
  if (!authzid.empty()) {
    const auto as = attribute(authzid, 'a');
    if (!as || decode_saslname(*as) != user_) return failed("the authorization identity differs from the user");
  }
  std::optional<ScramCredential> credential = lookup_(user_);
  known_user_ = credential.has_value() && credential->mechanism == mechanism_;
  credential_ = known_user_ ? std::move(*credential) : decoy(mechanism_, user_);
  client_nonce_ = std::string(*client_nonce);
  nonce_ = client_nonce_ + server_nonce_;
  server_first_ = "r=" + nonce_ + ",s=" + base64_encode(credential_.salt) + ",i=" +
                  std::to_string(credential_.iterations);
  Step s;
  s.state = State::kContinue;
  s.reply = server_first_;
  return s;
}

ScramServer::Step ScramServer::final(std::string_view message) {
  const size_t proof_at = message.rfind(",p=");
  if (proof_at == std::string_view::npos) return failed("the client-final message has no proof");
  const std::string_view without_proof = message.substr(0, proof_at);
  const auto parts = split_commas(without_proof);
  if (parts.size() < 2) return failed("the client-final message lacks c= or r=");
  const auto binding = attribute(parts[0], 'c');
  const auto nonce = attribute(parts[1], 'r');
  if (!binding || base64_decode(*binding) != gs2_header_) return failed("the channel binding does not match");
  // RFC 5802 echoes the combined nonce; librdkafka (kcat, confluent-kafka) sends its own nonce again
  // in front of it, which Kafka's brokers accept. Both spellings carry the server's fresh part, and the
  // proof covers the message as sent; anything else is refused.
  if (!nonce || (*nonce != nonce_ && *nonce != client_nonce_ + nonce_))
    return failed("the nonce does not match the exchange's");
  const auto proof = base64_decode(message.substr(proof_at + 3));
  const Digest d = scram_digest(mechanism_);
  if (!proof || proof->size() != digest_size(d)) return failed("the proof is not a digest");
  const std::string auth_message = client_first_bare_ + "," + server_first_ + "," + std::string(without_proof);
  const std::string client_key = xor_bytes(*proof, hmac(d, credential_.stored_key, auth_message));
  // Compared in full even for an unknown user, whose decoy keys never match.
  const bool proven = same_bytes(hash(d, client_key), credential_.stored_key);
  if (!proven || !known_user_) return failed("invalid credentials");
  Step s;
  s.state = State::kDone;
  s.reply = "v=" + base64_encode(hmac(d, credential_.server_key, auth_message));
  return s;
}

}  // namespace streamd::auth
