#include "server/kafka/connection.h"

#include <spdlog/spdlog.h>

#include "server/broker/broker.h"
#include "server/kafka/handlers.h"
#include "server/kafka/kafka_metrics.h"
#include "server/net/tls_stream.h"

namespace streamd::kafka {
namespace {

constexpr size_t kReadChunk = 64 * 1024;

}  // namespace

void Responder::send(Answer frame) const {
  conn_->answer(seq_, std::move(frame));
}
void Responder::send_nothing() const {
  conn_->answer(seq_, std::nullopt);
}
bool Responder::closed() const {
  return conn_->closed();
}
void Responder::add_waiter(std::shared_ptr<Waiter> waiter) const {
  conn_->add_waiter(seq_, std::move(waiter));
}
void Responder::remove_waiter() const {
  conn_->remove_waiter(seq_);
}

KafkaConnection::KafkaConnection(std::unique_ptr<ByteStream> stream, uint64_t connection_id, Context context)
    : stream_(std::move(stream)), id_(connection_id), context_(std::move(context)), peer_(stream_->peer()) {
  context_.services.metrics.connections.add(1);
  // Until a SASL login says otherwise: the verified client certificate's subject, or no one.
  if (std::string subject = stream_->peer_subject(); !subject.empty()) proof_ = auth::Proof::certificate(subject);
  const auth::Authenticator& auth = context_.services.auth;
  principal_ = auth.resolve(proof_).value_or(auth::Principal::anonymous(auth.table()));
  auth_generation_ = auth.generation();
}

KafkaConnection::~KafkaConnection() {
  context_.services.metrics.connections.add(-1);
}

void KafkaConnection::start() {
  buf_.resize(kReadChunk);
  last_activity_ = std::chrono::steady_clock::now();
  arm_idle_check(context_.limits.idle_timeout);
  read_more();
}

void KafkaConnection::arm_idle_check(std::chrono::milliseconds delay) {
  if (context_.limits.idle_timeout.count() <= 0 || closed_) return;
  std::weak_ptr<KafkaConnection> weak = weak_from_this();
  cancel_idle_check_ = context_.services.timers.schedule_after(delay, [weak] {
    if (auto self = weak.lock()) self->on_idle_check();
  });
}

void KafkaConnection::on_idle_check() {
  cancel_idle_check_ = nullptr;
  if (closed_) return;
  const auto idle = std::chrono::steady_clock::now() - last_activity_;
  const bool owes = !slots_.empty() || write_in_flight_;
  // Owed answers that are still being worked on (a long-poll, a sync) are not idleness; a write that
  // has not completed for the whole timeout is.
  if (idle >= context_.limits.idle_timeout && (!owes || write_in_flight_)) {
    spdlog::info("kafka connection {} from {}: idle for {} ms{}; closing it", id_, peer_,
                 std::chrono::duration_cast<std::chrono::milliseconds>(idle).count(),
                 write_in_flight_ ? " with an answer unread" : "");
    close();
    return;
  }
  const auto left = context_.limits.idle_timeout - std::chrono::duration_cast<std::chrono::milliseconds>(idle);
  arm_idle_check(std::max(left, std::chrono::milliseconds(1)));
}

void KafkaConnection::read_more() {
  if (closed_ || reading_stopped_ || read_in_flight_ || parsing_) return;
  if (inflight_bytes_ >= context_.limits.max_inflight_bytes && !slots_.empty()) return;  // resumes in flush
  if (buf_.size() - end_ < kReadChunk / 4) {
    // Move the unparsed tail to the front, then make room for at least one more chunk.
    if (begin_ > 0) {
      buf_.erase(0, begin_);
      end_ -= begin_;
      begin_ = 0;
      buf_.resize(std::max(buf_.size(), end_ + kReadChunk));
    }
    if (buf_.size() - end_ < kReadChunk / 4) buf_.resize(end_ + kReadChunk);
  }
  read_in_flight_ = true;
  stream_->read_some(buf_.data() + end_, buf_.size() - end_,
                     [self = shared_from_this()](const std::error_code& ec, size_t n) { self->on_read(ec, n); });
}

void KafkaConnection::on_read(const std::error_code& ec, size_t n) {
  read_in_flight_ = false;
  if (closed_) return;
  if (ec) {
    // EOF or a reset: what was read is still answered, then the connection closes.
    reading_stopped_ = true;
    maybe_finish();
    return;
  }
  if (!read_any_ && !context_.tls && looks_like_tls_hello({buf_.data() + end_, n})) {
    violation("a TLS handshake on the plaintext listener; TLS clients connect to kafka.tls_listen");
    reading_stopped_ = true;
    maybe_finish();
    return;
  }
  read_any_ = true;
  end_ += n;
  last_activity_ = std::chrono::steady_clock::now();
  parsing_ = true;
  const bool go_on = parse_frames();
  parsing_ = false;
  if (!go_on) {
    reading_stopped_ = true;
    maybe_finish();
    return;
  }
  if (begin_ == end_) begin_ = end_ = 0;
  read_more();
}

bool KafkaConnection::parse_frames() {
  while (!closed_ && !reading_stopped_ && end_ - begin_ >= 4) {
    const uint32_t size = get_be32(buf_.data() + begin_);
    if (size > context_.limits.max_frame_bytes) {
      violation("a frame of " + std::to_string(size) + " bytes is over limits.max_frame_bytes (" +
                std::to_string(context_.limits.max_frame_bytes) + ")");
      return false;
    }
    if (end_ - begin_ < 4 + static_cast<size_t>(size)) {
      // Make sure the whole frame fits once read.
      if (buf_.size() - begin_ < 4 + static_cast<size_t>(size)) {
        buf_.erase(0, begin_);
        end_ -= begin_;
        begin_ = 0;
        buf_.resize(std::max<size_t>(4 + static_cast<size_t>(size), kReadChunk));
      }
      return true;
    }
    std::string_view frame(buf_.data() + begin_ + 4, size);
    begin_ += 4 + static_cast<size_t>(size);
    if (!handle_frame(frame)) return false;
  }
  return true;
}

bool KafkaConnection::handle_frame(std::string_view frame) {
  if (bare_sasl_ && login_ == Login::kInProgress) return handle_bare_sasl(frame);
  ParsedHeader parsed = parse_request(frame);
  const bool sasl_offered = !context_.services.options.sasl_mechanisms.empty();
  if (parsed.api != nullptr && parsed.api->sasl && !sasl_offered) parsed.status = HeaderStatus::kUnknownApi;
  switch (parsed.status) {
    case HeaderStatus::kMalformed:
      violation("a request header that does not parse");
      return false;
    case HeaderStatus::kUnknownApi:
      violation("unknown API key " + std::to_string(parsed.header.api_key));
      return false;
    case HeaderStatus::kUnsupportedVersion:
      if (parsed.api->key == ApiKey::kApiVersions) {
        slots_.push_back(Slot{false, std::nullopt, ApiKey::kApiVersions, frame.size() + 4,
                              std::chrono::steady_clock::now()});
        inflight_bytes_ += frame.size() + 4;
        context_.services.metrics.error(ApiKey::kApiVersions, Error::kUnsupportedVersion);
        answer(head_seq_ + slots_.size() - 1,
               unsupported_api_versions_answer(parsed.header.correlation_id, sasl_offered));
        return true;
      }
      violation(std::string(parsed.api->name) + " version " + std::to_string(parsed.header.api_version) +
                " is not supported (" + std::to_string(parsed.api->min_version) + "-" +
                std::to_string(parsed.api->max_version) + " are)");
      return false;
    case HeaderStatus::kOk:
      break;
  }
  if (login_ == Login::kInProgress && parsed.api->key != ApiKey::kSaslAuthenticate) {
    violation(std::string(parsed.api->name) + " before the SASL login finished");
    return false;
  }
  if (!recheck_principal()) return false;
  const uint64_t seq = head_seq_ + slots_.size();
  slots_.push_back(Slot{false, std::nullopt, parsed.api->key, frame.size() + 4, std::chrono::steady_clock::now()});
  inflight_bytes_ += frame.size() + 4;
  Request request(parsed.header, parsed.body,
                  Responder(shared_from_this(), seq, parsed.header.correlation_id, parsed.api->key,
                            parsed.api->flexible(parsed.header.api_version)),
                  context_.services, principal_, context_.advertised);
  if (!parsed.api->handler(request)) {
    violation(std::string(parsed.api->name) + " v" + std::to_string(parsed.header.api_version) +
              " request body that does not parse");
    answer(seq, std::nullopt);  // its slot must not hold back the answers before it
    return false;
  }
  return true;
}

bool KafkaConnection::handle_bare_sasl(std::string_view message) {
  SaslSession::Step step = sasl_step(message);
  if (step.state == SaslSession::Step::State::kFailed) return false;  // v0 says nothing: the close tells
  // The answer is a bare frame too: its size, then the server's message.
  std::string frame(4, '\0');
  frame += step.reply;
  slots_.push_back(Slot{false, std::nullopt, ApiKey::kSaslAuthenticate, message.size() + 4,
                        std::chrono::steady_clock::now()});
  inflight_bytes_ += message.size() + 4;
  answer(head_seq_ + slots_.size() - 1, std::move(frame));
  return true;
}

Error KafkaConnection::begin_sasl(const std::string& mechanism, bool bare) {
  if (login_ != Login::kNone) return Error::kIllegalSaslState;
  login_ = Login::kInProgress;
  bare_sasl_ = bare;
  sasl_ = std::make_unique<SaslSession>(mechanism, context_.services.auth);
  return Error::kNone;
}

SaslSession::Step KafkaConnection::sasl_step(std::string_view message) {
  SaslSession::Step step;
  if (login_ != Login::kInProgress) {
    step.reason = "SaslAuthenticate without a SaslHandshake before it";
  } else {
    step = sasl_->step(message);
  }
  if (step.state == SaslSession::Step::State::kDone) {
    const auth::Authenticator& auth = context_.services.auth;
    auto principal = auth.resolve(*step.proof);
    if (principal) {
      proof_ = std::move(*step.proof);
      principal_ = std::move(*principal);
      auth_generation_ = auth.generation();
      login_ = Login::kDone;
      spdlog::debug("kafka connection {} from {}: {} login as {}", id_, peer_, sasl_->mechanism(), principal_.name());
      return step;
    }
    step.state = SaslSession::Step::State::kFailed;
    step.reason = "the principal went away during the login";
  }
  if (step.state == SaslSession::Step::State::kFailed) {
    // Logged once: the connection closes after this answer. The user name, never the password.
    context_.services.metrics.protocol_errors.inc();
    spdlog::warn("kafka connection {} from {}: SASL {} login{} failed: {}; closing", id_, peer_,
                 sasl_ ? sasl_->mechanism() : std::string("-"),
                 sasl_ && !sasl_->user().empty() ? " of user \"" + sasl_->user() + "\"" : std::string(), step.reason);
    login_ = Login::kDone;
    reading_stopped_ = true;
  }
  return step;
}

bool KafkaConnection::recheck_principal() {
  const auth::Authenticator& auth = context_.services.auth;
  if (auth_generation_ == auth.generation()) return true;
  auto principal = auth.resolve(proof_);
  if (!principal) {
    violation("the access file no longer holds the credential " + principal_.name() + " logged in with");
    return false;
  }
  principal_ = std::move(*principal);
  auth_generation_ = auth.generation();
  return true;
}

void KafkaConnection::violation(const std::string& what) {
  context_.services.metrics.protocol_errors.inc();
  spdlog::warn("kafka connection {} from {}: {}; closing it", id_, peer_, what);
}

void KafkaConnection::answer(uint64_t seq, std::optional<Answer> frame) {
  if (closed_ || seq < head_seq_ || seq - head_seq_ >= slots_.size()) return;
  Slot& slot = slots_[seq - head_seq_];
  if (slot.ready) return;
  slot.ready = true;
  KafkaMetrics& metrics = context_.services.metrics;
  metrics.requests(slot.api).inc();
  metrics.latency(slot.api)
      .observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - slot.received).count());
  if (frame) {
    const size_t size = frame->size();
    finish_response(frame->bytes, size);
    inflight_bytes_ += size;
    slot.frame = std::move(frame);
  }
  flush();
}

void KafkaConnection::flush() {
  // Answers leave in request order: take the ready slots at the head only.
  while (!slots_.empty() && slots_.front().ready) {
    Slot& head = slots_.front();
    inflight_bytes_ -= head.request_bytes;
    if (head.frame) writing_.push_back(std::move(*head.frame));
    slots_.pop_front();
    ++head_seq_;
  }
  if (!write_in_flight_ && !writing_.empty() && !closed_) {
    write_in_flight_ = true;
    write_views_.clear();
    for (const Answer& a : writing_) a.pieces(write_views_);
    stream_->write(write_views_, [self = shared_from_this(), count = writing_.size()](const std::error_code& ec,
                                                                                       size_t) {
      self->write_in_flight_ = false;
      self->last_activity_ = std::chrono::steady_clock::now();
      if (ec) {
        self->on_written(ec);
        return;
      }
      for (size_t i = 0; i < count; ++i) self->inflight_bytes_ -= self->writing_[i].size();
      for (size_t i = 0; i < count; ++i) self->writing_.pop_front();
      self->on_written(ec);
    });
  }
  maybe_finish();
  read_more();
}

void KafkaConnection::on_written(const std::error_code& ec) {
  if (closed_) return;
  if (ec) {
    spdlog::debug("kafka connection {} from {}: write failed: {}", id_, peer_, ec.message());
    close();
    return;
  }
  flush();
}

void KafkaConnection::maybe_finish() {
  if (closed_) return;
  if ((reading_stopped_ || draining_) && slots_.empty() && writing_.empty() && !write_in_flight_) close();
}

void KafkaConnection::drain() {
  draining_ = true;
  reading_stopped_ = true;
  auto waiting = waiters_;  // finishing may remove them
  for (auto& [seq, waiter] : waiting) waiter->finish_now();
  maybe_finish();
}

void KafkaConnection::close() {
  if (closed_) return;
  closed_ = true;
  stream_->close();
  if (cancel_idle_check_) {
    cancel_idle_check_();
    cancel_idle_check_ = nullptr;
  }
  auto waiting = std::move(waiters_);
  waiters_.clear();
  for (auto& [seq, waiter] : waiting) waiter->cancel();
  slots_.clear();
  if (context_.on_closed) {
    auto on_closed = std::move(context_.on_closed);
    context_.on_closed = nullptr;
    on_closed(id_);
  }
}

void KafkaConnection::add_waiter(uint64_t seq, std::shared_ptr<Waiter> waiter) {
  if (closed_) {
    waiter->cancel();
    return;
  }
  waiters_[seq] = std::move(waiter);
}

void KafkaConnection::remove_waiter(uint64_t seq) {
  waiters_.erase(seq);
}

}  // namespace streamd::kafka
