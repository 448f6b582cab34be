// HttpApi: /api/v1 (the broker's operations as JSON, docs/HTTP.md) and /ui/ (the console, the static
// page over that API, docs/CONSOLE.md), served on the daemon's HTTP listener beside /healthz,
// /readyz and /metrics.
//
// Every request passes the same gate before a handler sees it:
//  - Host must name this broker: localhost, a loopback address, or a name of console.allowed_hosts
//    (DNS rebinding); with an access file, any name (a rebinding page gets no credentials).
//  - On a listener that is not loopback, nothing is served without an access file.
//  - With an access file, /api wants a principal: a session cookie or "Authorization: Bearer".
//  - A change (POST, DELETE) must come from this origin: an Origin header, when sent, must match
//    Host, a Sec-Fetch-Site must not be cross-site, and a body must be application/json — which
//    a cross-site form cannot send without a CORS preflight, and the broker answers none.
//  - Rights are checked per stream by each handler, exactly as the native protocol checks them.
// Answers carry a strict Content-Security-Policy and the hygiene headers; the console's script
// renders records with textContent only.
//
// Threading: handle() on the network loop; it never blocks (handlers move their work to the API's
// own worker pool or the blocking pool). stop() before the broker closes.
#pragma once

#include <chrono>
#include <memory>

#include "server/auth/authenticator.h"
#include "server/broker/broker.h"
#include "server/http_api/api_context.h"
#include "server/metrics/metrics.h"
#include "server/net/http_server.h"
#include "server/storage/executor.h"

namespace streamd::http_api {

class HttpApi {
 public:
  HttpApi(Broker& broker, Executor& blocking, Scheduler& scheduler, MetricsRegistry& metrics,
          const auth::Authenticator& auth, ApiOptions options, std::chrono::steady_clock::time_point started);
  ~HttpApi();
  HttpApi(const HttpApi&) = delete;
  HttpApi& operator=(const HttpApi&) = delete;

  // Whether `path` is the API's or the console's (the caller answers the rest).
  static bool serves(std::string_view path);
  void handle(HttpRequest request, HttpServer::Reply reply);
  // Answers waiting tails, cancels searches, stops sampling and joins the workers.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace streamd::http_api
