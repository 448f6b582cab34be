// RequestHandler: maps each Request kind of proto/streamd.proto onto a Broker call and answers it on
// the request's connection (docs/PROTOCOL.md §Operations).
//
// Runs on the network loop, in request arrival order; it never waits for the disk there:
//  - create, delete, trim and compact (they sync files) run on the `blocking` executor, a pool of
//    their own, and post their encoded answer back to the loop;
//  - append and commit are asynchronous in the broker; their completions, on storage threads, are
//    posted back to the loop. Appends are handed to the broker in arrival order, which is what keeps
//    pipelined appends to one partition in sending order;
//  - reads, bounds, peek, offset_at, committed, describe and list read memory and the page cache and
//    answer inline; a Read with wait_ms > 0 becomes a LongPollRead (long_poll.h).
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
  RequestHandler(asio::io_context& io, Broker& broker, Executor& blocking, NetMetrics& metrics);

  void handle(const std::shared_ptr<Connection>& conn, const Ticket& ticket,
              std::unique_ptr<v1::Request> request);

 private:
  using Work = std::function<v1::Response(const v1::Request&)>;
  // Runs `work` on the blocking executor and answers with its result on the loop.
  void offload(const std::shared_ptr<Connection>& conn, const Ticket& ticket,
               std::unique_ptr<v1::Request> request, Work work);
  void append(const std::shared_ptr<Connection>& conn, const Ticket& ticket,
              const v1::AppendRequest& request);
  void commit(const std::shared_ptr<Connection>& conn, const Ticket& ticket,
              const v1::CommitRequest& request);
  void read(const std::shared_ptr<Connection>& conn, const Ticket& ticket, const v1::ReadRequest& request);
  // Answers the requests that read memory or the page cache, inline.
  v1::Response answer_inline(const v1::Request& request);

  asio::io_context& io_;
  Broker& broker_;
  Executor& blocking_;
  NetMetrics& metrics_;
  const std::chrono::steady_clock::time_point started_;
};

}  // namespace streamd
