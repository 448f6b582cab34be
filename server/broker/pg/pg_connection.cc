#include "server/broker/pg/pg_connection.h"

#include "server/broker/pg/pg_marshalled.h"

#include <libpq-fe.h>
#include <poll.h>

#include <algorithm>
#include <climits>
#include <cerrno>
#include <cstring>

namespace streamd {
namespace {

// pg_type.h's OIDs of the types the engine binds.
constexpr unsigned kInt8Oid = 20;
constexpr unsigned kInt4Oid = 23;
constexpr unsigned kTextOid = 25;
constexpr unsigned kByteaOid = 17;
constexpr unsigned kInt8ArrayOid = 1016;
constexpr unsigned kInt4ArrayOid = 1007;
constexpr unsigned kByteaArrayOid = 1001;
constexpr unsigned kTextArrayOid = 1009;

std::string big_endian(uint64_t v, int bytes) {
  std::string out(static_cast<size_t>(bytes), '\0');
  for (int i = bytes - 1; i >= 0; --i, v >>= 8) out[static_cast<size_t>(i)] = static_cast<char>(v & 0xff);
  return out;
}

// array_recv's header for `count` elements of `elem_oid`: dimensions, no NULLs, then per dimension
// its length and lower bound (1); an empty array has no dimension.
std::string array_header(unsigned elem_oid, size_t count) {
  std::string out = big_endian(count > 0 ? 1 : 0, 4) + big_endian(0, 4) + big_endian(elem_oid, 4);
  if (count > 0) out += big_endian(count, 4) + big_endian(1, 4);
  return out;
}

uint64_t from_big_endian(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

// The server's message without its trailing newline.
std::string trimmed(const char* message) {
  std::string out = message ? message : "";
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace

PgParams& PgParams::add(unsigned type, std::string_view bytes) {
  types_.push_back(type);
  values_.push_back(bytes);
  return *this;
}

PgParams& PgParams::add_owned(unsigned type, std::string bytes) {
  owned_.push_back(std::make_unique<std::string>(std::move(bytes)));
  return add(type, *owned_.back());
}

PgParams& PgParams::int8(int64_t v) { return add_owned(kInt8Oid, big_endian(static_cast<uint64_t>(v), 8)); }
PgParams& PgParams::int4(int32_t v) {
  return add_owned(kInt4Oid, big_endian(static_cast<uint32_t>(v), 4));
}
PgParams& PgParams::bytea(std::string_view v) { return add(kByteaOid, v); }
PgParams& PgParams::text(std::string_view v) { return add(kTextOid, v); }

PgParams& PgParams::int8_array(const std::vector<int64_t>& v) {
  std::string out = array_header(kInt8Oid, v.size());
  for (int64_t x : v) out += big_endian(8, 4) + big_endian(static_cast<uint64_t>(x), 8);
  return add_owned(kInt8ArrayOid, std::move(out));
}

PgParams& PgParams::int4_array(const std::vector<int32_t>& v) {
  std::string out = array_header(kInt4Oid, v.size());
  for (int32_t x : v) out += big_endian(4, 4) + big_endian(static_cast<uint32_t>(x), 4);
  return add_owned(kInt4ArrayOid, std::move(out));
}

PgParams& PgParams::bytea_array(const std::vector<std::string_view>& v) { return bytes_array(kByteaOid, kByteaArrayOid, v); }

PgParams& PgParams::text_array(const std::vector<std::string_view>& v) { return bytes_array(kTextOid, kTextArrayOid, v); }

PgParams& PgParams::bytes_array(unsigned element, unsigned array, const std::vector<std::string_view>& v) {
  std::string out = array_header(element, v.size());
  size_t total = out.size();
  for (std::string_view x : v) total += 4 + x.size();
  out.reserve(total);
  for (std::string_view x : v) {
    out += big_endian(x.size(), 4);
    out += x;
  }
  return add_owned(array, std::move(out));
}

void PgResult::clear(pg_result* r) { PQclear(r); }
int PgResult::rows() const { return result_ ? PQntuples(result_.get()) : 0; }
uint64_t PgResult::affected() const {
  if (!result_) return 0;
  const char* n = PQcmdTuples(result_.get());
  return n && *n ? std::strtoull(n, nullptr, 10) : 0;
}
bool PgResult::is_null(int row, int col) const { return PQgetisnull(result_.get(), row, col) != 0; }
int64_t PgResult::int8(int row, int col) const {
  return static_cast<int64_t>(from_big_endian(PQgetvalue(result_.get(), row, col), 8));
}
int32_t PgResult::int4(int row, int col) const {
  return static_cast<int32_t>(from_big_endian(PQgetvalue(result_.get(), row, col), 4));
}
std::string_view PgResult::bytes(int row, int col) const {
  return {PQgetvalue(result_.get(), row, col), static_cast<size_t>(PQgetlength(result_.get(), row, col))};
}

Result<std::unique_ptr<PgConnection>> PgConnection::connect(const std::string& dsn, const PgSession& session) {
  // libpq takes keywords in order, a later one overriding an earlier: the DSN's own connect_timeout,
  // when it has one, wins over the default placed before it.
  const std::string timeout = std::to_string(kDefaultConnectTimeout);
  const char* const keys[] = {"connect_timeout", "dbname", nullptr};
  const char* const values[] = {timeout.c_str(), dsn.c_str(), nullptr};
  PGconn* conn = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (conn == nullptr) return Status(Code::kStreamBackendFailed, "libpq could not allocate a connection");
  Fields fields{{"op", "connect"}};
  if (!session.shard.empty()) fields["shard"] = session.shard;
  if (PQstatus(conn) != CONNECTION_OK) {
    // The message names host and port, never the password.
    fields["reason"] = trimmed(PQerrorMessage(conn));
    PQfinish(conn);
    return Status(Code::kStreamBackendFailed, "cannot connect to PostgreSQL", std::move(fields));
  }
  if (PQsetnonblocking(conn, 1) != 0) {
    fields["reason"] = trimmed(PQerrorMessage(conn));
    PQfinish(conn);
    return Status(Code::kStreamBackendFailed, "cannot make a PostgreSQL connection non-blocking", std::move(fields));
  }
  std::unique_ptr<PgConnection> out(new PgConnection(conn, session));
  // So an operator's pg_stat_activity says which sessions are the broker's.
  STREAMD_RETURN_IF_ERROR(out->run("connect", "SET application_name = 'streamd'"));
  return out;
}

PgConnection::~PgConnection() { PQfinish(conn_); }

bool PgConnection::broken() const { return gave_up_ || PQstatus(conn_) != CONNECTION_OK; }

int PgConnection::socket() const { return PQsocket(conn_); }

Status PgConnection::failure(std::string_view op, pg_result* result) const {
  Fields fields{{"op", std::string(op)}};
  if (!session_.shard.empty()) fields["shard"] = session_.shard;
  if (gave_up_) {
    // The server may have committed what it was sent, and may yet: nobody can tell from here.
    fields["outcome"] = "unknown";
    fields["reason"] = "PostgreSQL did not answer within storage.postgres.reply_timeout (" +
                       std::to_string(session_.reply_timeout.count()) + " ms); the connection is given up";
    return Status(Code::kStreamBackendFailed, "PostgreSQL did not answer in time; the outcome is unknown",
                  std::move(fields));
  }
  if (broken()) {
    // The server may have committed what it was sent: nobody can tell from here.
    fields["outcome"] = "unknown";
    fields["reason"] = "the connection to PostgreSQL was lost before its answer: " + trimmed(PQerrorMessage(conn_));
    return Status(Code::kStreamBackendFailed, "PostgreSQL did not answer; the outcome is unknown", std::move(fields));
  }
  const char* state = result ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  if (state) fields["sqlstate"] = state;
  fields["reason"] = trimmed(result ? PQresultErrorMessage(result) : PQerrorMessage(conn_));
  return Status(Code::kStreamBackendFailed, "PostgreSQL refused a statement", std::move(fields));
}

Result<PgResult> PgConnection::answer(std::string_view op, pg_result* r) const {
  PgResult result(r);
  const ExecStatusType status = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) return failure(op, r);
  return result;
}

bool PgConnection::wait_socket(bool writable, std::chrono::steady_clock::time_point deadline) const {
  using Steady = std::chrono::steady_clock;
  for (;;) {
    int wait = -1;
    if (deadline != Steady::time_point::max()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Steady::now()).count();
      if (left <= 0) return false;
      wait = static_cast<int>(std::min<int64_t>(left, INT_MAX));
    }
    // While a statement is still being written the server may already answer (an error): both count.
    pollfd fd{PQsocket(conn_), static_cast<short>(writable ? POLLIN | POLLOUT : POLLIN), 0};
    const int ready = ::poll(&fd, 1, wait);
    if (ready > 0) return true;
    if (ready < 0 && errno != EINTR) return true;  // the next libpq call reports what broke
  }
}

std::chrono::steady_clock::time_point PgConnection::reply_deadline() const {
  using Steady = std::chrono::steady_clock;
  return session_.reply_timeout.count() > 0 ? Steady::now() + session_.reply_timeout : Steady::time_point::max();
}

bool PgConnection::flush_until(std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    const int flushed = PQflush(conn_);
    if (flushed < 0) return false;
    if (flushed == 0) return true;
    if (!wait_socket(true, deadline)) {
      gave_up_ = true;
      return false;
    }
    if (PQconsumeInput(conn_) == 0) return false;
  }
}

pg_result* PgConnection::await(std::string_view /*op*/) {
  const auto deadline = reply_deadline();
  if (!flush_until(deadline)) return nullptr;
  pg_result* last = nullptr;
  pg_result* error = nullptr;
  auto clear_all = [&] {
    if (last) PQclear(last);
    if (error) PQclear(error);
    return nullptr;
  };
  for (;;) {
    while (PQisBusy(conn_) != 0) {
      if (!wait_socket(false, deadline)) {
        gave_up_ = true;
        return clear_all();
      }
      if (PQconsumeInput(conn_) == 0) return clear_all();
    }
    pg_result* r = PQgetResult(conn_);
    if (r == nullptr) break;
    const ExecStatusType status = PQresultStatus(r);
    if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK && status != PGRES_EMPTY_QUERY && error == nullptr) {
      error = r;  // the first error is the one to report, as PQexec does
    } else {
      if (last) PQclear(last);
      last = r;
    }
  }
  if (error) {
    if (last) PQclear(last);
    return error;
  }
  return last;
}

Result<PgResult> PgConnection::exec(std::string_view op, const std::string& sql, const PgParams& params) {
  if (broken()) return failure(op, nullptr);
  const PgMarshalled m(params.values_);
  if (PQsendQueryParams(conn_, sql.c_str(), static_cast<int>(params.size()), params.types_.data(), m.values.data(),
                        m.lengths.data(), m.formats.data(), 1) == 0) {
    return failure(op, nullptr);
  }
  return answer(op, await(op));
}

Result<PgResult> PgConnection::exec_prepared(std::string_view op, const char* name, const std::string& sql,
                                             const PgParams& params) {
  if (broken()) return failure(op, nullptr);
  const int n = static_cast<int>(params.size());
  if (prepared_.find(name) == prepared_.end()) {
    if (PQsendPrepare(conn_, name, sql.c_str(), n, params.types_.data()) == 0) return failure(op, nullptr);
    auto prepared = answer(op, await(op));
    if (!prepared.ok()) return prepared.status();
    prepared_.emplace(name);
  }
  const PgMarshalled m(params.values_);
  if (PQsendQueryPrepared(conn_, name, n, m.values.data(), m.lengths.data(), m.formats.data(), 1) == 0) {
    return failure(op, nullptr);
  }
  return answer(op, await(op));
}

Status PgConnection::run(std::string_view op, const std::string& sql) {
  if (broken()) return failure(op, nullptr);
  if (PQsendQuery(conn_, sql.c_str()) == 0) return failure(op, nullptr);
  return answer(op, await(op)).status();
}

Result<std::vector<std::string>> PgConnection::take_notifications(std::string_view own) {
  if (PQconsumeInput(conn_) == 0) return failure("listen", nullptr);
  std::vector<std::string> out;
  const int self = PQbackendPID(conn_);
  while (PGnotify* n = PQnotifies(conn_)) {
    // This broker's own NOTIFYs come back too, from this session and from its pool's.
    const std::string_view payload(n->extra);
    const bool own_tag = payload.substr(0, own.size()) == own &&
                         (payload.size() == own.size() || payload[own.size()] == '|');
    if (n->be_pid != self && !own_tag) out.emplace_back(payload);
    PQfreemem(n);
  }
  return out;
}

}  // namespace streamd
