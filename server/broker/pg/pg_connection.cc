#include "server/broker/pg/pg_connection.h"

#include <libpq-fe.h>

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

PgParams& PgParams::bytea_array(const std::vector<std::string_view>& v) {
  std::string out = array_header(kByteaOid, v.size());
  size_t total = out.size();
  for (std::string_view x : v) total += 4 + x.size();
  out.reserve(total);
  for (std::string_view x : v) {
    out += big_endian(x.size(), 4);
    out += x;
  }
  return add_owned(kByteaArrayOid, std::move(out));
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

Result<std::unique_ptr<PgConnection>> PgConnection::connect(const std::string& dsn) {
  PGconn* conn = PQconnectdb(dsn.c_str());
  if (conn == nullptr) return Status(Code::kStreamBackendFailed, "libpq could not allocate a connection");
  if (PQstatus(conn) != CONNECTION_OK) {
    // The message names host and port, never the password.
    Status s(Code::kStreamBackendFailed, "cannot connect to PostgreSQL",
             {{"op", "connect"}, {"reason", trimmed(PQerrorMessage(conn))}});
    PQfinish(conn);
    return s;
  }
  std::unique_ptr<PgConnection> out(new PgConnection(conn));
  // So an operator's pg_stat_activity says which sessions are the broker's.
  STREAMD_RETURN_IF_ERROR(out->run("connect", "SET application_name = 'streamd'"));
  return out;
}

PgConnection::~PgConnection() { PQfinish(conn_); }

bool PgConnection::broken() const { return PQstatus(conn_) != CONNECTION_OK; }

int PgConnection::socket() const { return PQsocket(conn_); }

Status PgConnection::failure(std::string_view op, pg_result* result) const {
  Fields fields{{"op", std::string(op)}};
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

namespace {

// PQexecParams' and PQexecPrepared's view of `params`: all binary.
struct Marshalled {
  explicit Marshalled(const std::vector<std::string_view>& v) : values(v.size()), lengths(v.size()), formats(v.size(), 1) {
    for (size_t i = 0; i < v.size(); ++i) {
      values[i] = v[i].data();
      lengths[i] = static_cast<int>(v[i].size());
    }
  }
  std::vector<const char*> values;
  std::vector<int> lengths;
  std::vector<int> formats;
};

}  // namespace

Result<PgResult> PgConnection::exec(std::string_view op, const std::string& sql, const PgParams& params) {
  const Marshalled m(params.values_);
  return answer(op, PQexecParams(conn_, sql.c_str(), static_cast<int>(params.size()), params.types_.data(),
                                 m.values.data(), m.lengths.data(), m.formats.data(), 1));
}

Result<PgResult> PgConnection::exec_prepared(std::string_view op, const char* name, const std::string& sql,
                                             const PgParams& params) {
  const int n = static_cast<int>(params.size());
  if (prepared_.find(name) == prepared_.end()) {
    auto prepared = answer(op, PQprepare(conn_, name, sql.c_str(), n, params.types_.data()));
    if (!prepared.ok()) return prepared.status();
    prepared_.emplace(name);
  }
  const Marshalled m(params.values_);
  return answer(op, PQexecPrepared(conn_, name, n, m.values.data(), m.lengths.data(), m.formats.data(), 1));
}

Status PgConnection::run(std::string_view op, const std::string& sql) {
  PGresult* r = PQexec(conn_, sql.c_str());
  PgResult result(r);
  const ExecStatusType status = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) return failure(op, r);
  return Status();
}

Result<int> PgConnection::take_notifications(std::string_view own) {
  if (PQconsumeInput(conn_) == 0) return failure("listen", nullptr);
  int count = 0;
  const int self = PQbackendPID(conn_);
  while (PGnotify* n = PQnotifies(conn_)) {
    // This broker's own NOTIFYs come back too, from this session and from its pool's.
    if (n->be_pid != self && own != n->extra) ++count;
    PQfreemem(n);
  }
  return count;
}

}  // namespace streamd
