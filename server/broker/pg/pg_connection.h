// PgConnection: one libpq connection to the PostgreSQL engine's database (docs/ENGINES.md), with the
// few calls the engine makes: statements with binary parameters and binary results, and the
// transaction brackets. Every call blocks its thread until the server answers, so the engine runs them
// on its own threads (and the broker's storage and reader threads), never on a network loop.
//
// Errors are STREAM_BACKEND_FAILED with fields op (what the engine was doing), sqlstate and reason (the
// server's message), and shard when the connection belongs to one of storage.postgres.shards. A
// connection lost before the server answered is an unknown outcome: the statement may or may not have
// committed; the error then says so (field outcome=unknown) and the connection is broken() from there
// on, to be dropped by its pool.
//
// A server that stops answering without closing the connection (a hung or SIGSTOPped primary: its
// kernel still acknowledges every packet, so no TCP timeout fires) would hold a statement forever.
// Every statement is therefore sent and awaited without blocking, and one whose answer has not come
// within the session's reply_timeout is given up the same way: outcome unknown, connection broken.
// Connecting is bounded too: a DSN without connect_timeout gets kDefaultConnectTimeout (libpq applies
// it to each host of a multi-host DSN, so a hung first host costs that long, then the next is tried).
//
// Statements that depend on each other only through the rows they lock and write, not through what
// the broker reads from their answers, go together in one round trip (pipeline(): libpq's pipeline
// mode), so that a transaction of n such statements costs two round trips rather than n + 2.
//
// Thread-safety: one thread at a time per connection (the pool hands each to one caller).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "server/storage/status.h"

struct pg_conn;
struct pg_result;

namespace streamd {

// What a connection's session carries besides its DSN.
struct PgSession {
  // How long a statement may go unanswered before the connection is given up (zero: forever).
  std::chrono::milliseconds reply_timeout{30000};
  // The shard's name, added to every error as field "shard"; empty for a lone database.
  std::string shard;
};

// connect_timeout (seconds) for a DSN that sets none.
inline constexpr int kDefaultConnectTimeout = 10;

// Parameters of one statement, all sent in binary; their types are given, so the SQL needs no casts.
class PgParams {
 public:
  PgParams& int8(int64_t v);
  PgParams& int4(int32_t v);
  PgParams& bytea(std::string_view v);  // not copied: the bytes must outlive the statement
  PgParams& text(std::string_view v);   // not copied either
  // One-dimensional arrays without NULLs, in PostgreSQL's binary array format (copied), so that a
  // statement of any number of rows has one text: unnest($n, …) in the SQL.
  PgParams& int8_array(const std::vector<int64_t>& v);
  PgParams& int4_array(const std::vector<int32_t>& v);
  PgParams& bytea_array(const std::vector<std::string_view>& v);
  PgParams& text_array(const std::vector<std::string_view>& v);  // UTF-8 strings
  size_t size() const { return types_.size(); }

 private:
  friend class PgConnection;
  PgParams& add(unsigned type, std::string_view bytes);
  PgParams& add_owned(unsigned type, std::string bytes);
  // An array of `element`s given as their bytes (text and bytea).
  PgParams& bytes_array(unsigned element, unsigned array, const std::vector<std::string_view>& v);

  std::vector<unsigned> types_;
  std::vector<std::string_view> values_;
  std::vector<std::unique_ptr<std::string>> owned_;  // the integers' network-order bytes
};

// A statement's answer, rows in binary.
class PgResult {
 public:
  PgResult() = default;
  explicit PgResult(pg_result* result) : result_(result, &clear) {}

  int rows() const;
  // How many rows an INSERT, UPDATE or DELETE touched.
  uint64_t affected() const;
  bool is_null(int row, int col) const;
  int64_t int8(int row, int col) const;
  int32_t int4(int row, int col) const;
  // text and bytea: the value's bytes, valid while this result lives.
  std::string_view bytes(int row, int col) const;
  // Keeps the rows' bytes alive (ReadResult::owners).
  std::shared_ptr<const void> owner() const { return result_; }

 private:
  static void clear(pg_result* r);
  std::shared_ptr<pg_result> result_;
};

// One statement of a pipeline: prepared on the connection under `name` the first time, as
// exec_prepared() does. The pointers must outlive the call.
struct PgStatement {
  const char* name;
  const std::string* sql;
  const PgParams* params;
};

enum class PgPipelineEnd {
  kHold,  // the server answers and the transaction stays open for the next pipeline (a Flush)
  kSync,  // a Sync follows the statements: the implicit transaction, if one is open, commits
};

class PgConnection {
 public:
  // Connects and sets the session up: the engine's statements rely on nothing else.
  static Result<std::unique_ptr<PgConnection>> connect(const std::string& dsn, const PgSession& session = {});
  ~PgConnection();
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  Result<PgResult> exec(std::string_view op, const std::string& sql, const PgParams& params = {});
  // exec() of a statement the engine runs all the time, prepared on this connection the first time
  // under `name` (one name per SQL text), so the server parses and plans it once per connection.
  Result<PgResult> exec_prepared(std::string_view op, const char* name, const std::string& sql,
                                 const PgParams& params);
  // Statements without parameters or rows (BEGIN, COMMIT, DDL).
  Status run(std::string_view op, const std::string& sql);
  // Runs `body` between BEGIN and COMMIT; any error rolls back (or finds the connection gone).
  template <typename Body>
  Status transaction(std::string_view op, Body&& body) {
    STREAMD_RETURN_IF_ERROR(run(op, "BEGIN"));
    Status s = body();
    if (!s.ok()) {
      if (!broken()) (void)run(op, "ROLLBACK");
      return s;
    }
    return run(op, "COMMIT");
  }

  // Sends `statements` in one round trip and returns their answers, in order. Outside BEGIN … COMMIT
  // the statements of consecutive pipelines, up to and including the first that ends kSync, run as one
  // implicit transaction, which that Sync commits: the statements after a lock see what was committed
  // before it was granted, as they would after BEGIN (each statement takes its own snapshot). Inside
  // BEGIN … COMMIT they are statements of that transaction. A statement that fails skips those after it
  // and rolls the implicit transaction back (an explicit one is left failed, for its ROLLBACK); the
  // error is returned with the pipeline ended. A pipeline left held ends with the next kSync, or sync().
  Result<std::vector<PgResult>> pipeline(std::string_view op, const std::vector<PgStatement>& statements,
                                         PgPipelineEnd end);
  // Ends a held pipeline without more statements: what its implicit transaction did is committed.
  Status sync(std::string_view op);

  // The connection was lost, or given up after reply_timeout.
  bool broken() const;
  // The descriptor NOTIFY arrives on, and the payloads of the notifications from other sessions that
  // arrived since the last call, leaving out those tagged `own` (what this broker's other sessions
  // sent: the payload `own`, or one starting "own|").
  int socket() const;
  Result<std::vector<std::string>> take_notifications(std::string_view own);

 private:
  PgConnection(pg_conn* conn, PgSession session) : conn_(conn), session_(std::move(session)) {}
  Status failure(std::string_view op, pg_result* result) const;
  Result<PgResult> answer(std::string_view op, pg_result* result) const;
  // After a PQsend*: flushes the statement and collects its answer within reply_timeout. The last
  // result (the first error, when one came), or nullptr when the connection broke or the time ran out.
  pg_result* await(std::string_view op);
  // await()'s sending half: flushes what libpq holds until `deadline`; false when the connection broke
  // or the time ran out (gave_up_ set).
  bool flush_until(std::chrono::steady_clock::time_point deadline);
  // The next result of a pipeline, waited for until `deadline`; nullptr between one statement's
  // results and the next's, and when the connection broke or the time ran out (gave_up_ set).
  pg_result* next_result(std::chrono::steady_clock::time_point deadline, bool& failed);
  std::chrono::steady_clock::time_point reply_deadline() const;
  // Sends the Sync that ends a pipeline unless `sync_sent`, reads up to its answer and leaves pipeline
  // mode.
  Status end_pipeline(std::string_view op, std::chrono::steady_clock::time_point deadline, bool sync_sent);
  // Waits for the socket to become readable (or writable) until `deadline`; false past it.
  bool wait_socket(bool writable, std::chrono::steady_clock::time_point deadline) const;

  pg_conn* conn_;
  const PgSession session_;
  bool gave_up_ = false;  // a statement went unanswered past reply_timeout
  std::set<std::string, std::less<>> prepared_;  // the names prepared on this connection
};

}  // namespace streamd
