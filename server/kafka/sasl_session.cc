#include "server/kafka/sasl_session.h"

#include "server/auth/sasl_plain.h"

namespace streamd::kafka {
namespace {

SaslSession::Step failed(std::string reason) {
  SaslSession::Step s;
  s.state = SaslSession::Step::State::kFailed;
  s.reason = std::move(reason);
  return s;
}

}  // namespace

SaslSession::SaslSession(std::string mechanism, const auth::Authenticator& auth)
    : mechanism_(std::move(mechanism)), auth_(auth) {
  if (auto m = auth::parse_scram_mechanism(mechanism_)) {
    scram_ = std::make_unique<auth::ScramServer>(*m, [this, m = *m](std::string_view user) {
      return auth_.scram(user, m);
    });
  }
}

SaslSession::Step SaslSession::step(std::string_view message) {
  if (over_) return failed("a SASL message after the login ended");
  Step s = scram_ ? scram(message) : plain(message);
  if (s.state != Step::State::kContinue) over_ = true;
  return s;
}

SaslSession::Step SaslSession::plain(std::string_view message) {
  auto credentials = auth::parse_sasl_plain(message);
  if (!credentials) return failed("a PLAIN message that is not \"authzid NUL user NUL password\"");
  user_ = credentials->user;
  auto proof = auth_.check_plain(credentials->user, credentials->password);
  if (!proof) return failed("invalid credentials");
  Step s;
  s.state = Step::State::kDone;
  s.proof = std::move(proof);
  return s;
}

SaslSession::Step SaslSession::scram(std::string_view message) {
  auth::ScramServer::Step step = scram_->step(message);
  user_ = scram_->user();
  Step s;
  s.reply = std::move(step.reply);
  switch (step.state) {
    case auth::ScramServer::State::kContinue:
      s.state = Step::State::kContinue;
      return s;
    case auth::ScramServer::State::kFailed:
      return failed(std::move(step.reason));
    case auth::ScramServer::State::kDone:
      break;
  }
  // The proof names the credential it was checked against, so a reload that changes it ends the login.
  auto credential = auth_.scram(user_, *auth::parse_scram_mechanism(mechanism_));
  if (!credential) return failed("the user's credential went away during the login");
  s.state = Step::State::kDone;
  auth::Proof proof;
  proof.kind = auth::Proof::Kind::kSasl;
  proof.name = user_;
  proof.credential = credential->stored_key;
  s.proof = std::move(proof);
  return s;
}

}  // namespace streamd::kafka
