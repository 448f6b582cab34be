// The answers to the requests that need no connection state: one function per request kind, each
// calling the broker and building the Response with the request's id (or the error it met). The
// RequestHandler decides where each runs: admin calls, which sync files, on a blocking thread; peek
// and offset_at, which read logs, on a reader thread; the rest inline on the loop.
#pragma once

#include <chrono>
#include <cstdint>

#include "server/auth/principal.h"
#include "server/broker/broker.h"
#include "server/storage/status.h"
#include "streamd.pb.h"

namespace streamd {

// A Response carrying only `status` as its error.
v1::Response error_response(uint64_t id, const Status& status);

// Changes: they may touch the disk.
v1::Response answer_create_stream(Broker& broker, const v1::Request& req);
v1::Response answer_delete_stream(Broker& broker, const v1::Request& req);
v1::Response answer_alter_stream(Broker& broker, const v1::Request& req);
v1::Response answer_trim(Broker& broker, const v1::Request& req);
v1::Response answer_compact(Broker& broker, const v1::Request& req);
v1::Response answer_init_producer(Broker& broker, const v1::Request& req);

// Queries: they change nothing.
// The streams `principal` may read.
v1::Response answer_list_streams(const Broker& broker, const v1::Request& req, const auth::Principal& principal);
v1::Response answer_describe_stream(const Broker& broker, const v1::Request& req);
v1::Response answer_bounds(const Broker& broker, const v1::Request& req);
v1::Response answer_peek(const Broker& broker, const v1::Request& req);
v1::Response answer_offset_at(const Broker& broker, const v1::Request& req);
v1::Response answer_committed(const Broker& broker, const v1::Request& req);
v1::Response answer_list_groups(const Broker& broker, const v1::Request& req);
v1::Response answer_health(const Broker& broker, const v1::Request& req,
                           std::chrono::steady_clock::time_point started);

}  // namespace streamd
