// RequestHandler: maps each Request kind of proto/streamd.proto onto a Broker call and answers it on
// the request's connection (docs/PROTOCOL.md §Operations).
//
// Runs on the network loop, in request arrival order; it never waits for the disk there:
//  - create, delete, trim and compact (they sync files) run on the `blocking` executor, a pool of
//    their own, and post their encoded answer back to the loop;
//  - append and commit are asynchronous in the broker; their completions, on storage threads, are
//    posted back to the loop. Appends are handed to the broker in arrival order, which is what keeps
//    pipelined appends to one partition in sending order;
//  - reads, peek and offset_at read the logs, whose pages may have to come from the disk: they run on
//    the `readers` executor, except a Read of active segments only (a LongPollRead, waiting or not,
//    long_poll.h, decides); bounds, committed, describe, list and health read memory and answer inline.
// The connection has checked the principal's rights before; a listing shows only the streams it may
// read.
#pragma once

#include <chrono>
#include <memory>

#include "server/broker/broker.h"
#include "server/net/connection.h"
#include "streamd.pb.h"

namespace asio {
class io_context;
}

namespace streamd {

class NetMetrics;

class RequestHandler {
 public:
  RequestHandler(asio::io_context& io, Broker& broker, Executor& blocking, Executor& readers,
                 NetMetrics& metrics);

  void handle(const std::shared_ptr<Connection>& conn, const Ticket& ticket,
              std::unique_ptr<v1::Request> request);

 private:
  using Answer = std::function<v1::Response(Broker& broker, const v1::Request& request)>;
  // Runs `answer` (answers.h) on `executor` and sends its result from the loop.
  void offload(Executor& executor, const std::shared_ptr<Connection>& conn, const Ticket& ticket,
               std::unique_ptr<v1::Request> request, Answer answer);
  void hello(const std::shared_ptr<Connection>& conn, const Ticket& ticket);
  void append(const std::shared_ptr<Connection>& conn, const Ticket& ticket,
              const v1::AppendRequest& request);
  void commit(const std::shared_ptr<Connection>& conn, const Ticket& ticket,
              const v1::CommitRequest& request);
  void read(const std::shared_ptr<Connection>& conn, const Ticket& ticket, const v1::ReadRequest& request);
  // Answers, inline, the queries that read no log (answers.h).
  v1::Response answer_query(const v1::Request& request) const;

  asio::io_context& io_;
  Broker& broker_;
  Executor& blocking_;
  Executor& readers_;
  NetMetrics& metrics_;
  const std::chrono::steady_clock::time_point started_;
};

}  // namespace streamd
