#include "server/http_api/http_api.h"

#include <spdlog/spdlog.h>

#include <array>
#include <optional>

#include "server/console/console_assets.h"
#include "server/http_api/gate.h"
#include "server/http_api/history.h"
#include "server/http_api/search_job.h"
#include "server/http_api/sessions.h"
#include "server/http_api/tails.h"

namespace streamd::http_api {
namespace {

// Threads that read logs and scan for the API, apart from the native protocol's readers, so a
// search keeps neither a native read nor the loop waiting.
constexpr unsigned kWorkers = 2;
// Logins checking a password (PBKDF2) at once; more are refused until one ends.
constexpr int kMaxLogins = 4;
constexpr std::string_view kApiPrefix = "/api/v1/";

using Handler = void (*)(ApiContext&, const Call&);

struct Route {
  std::string_view method;
  std::string_view pattern;  // after /api/v1/; "{}" matches one segment
  Handler handler;
};

constexpr std::array kRoutes = {
    Route{"GET", "health", health},
    Route{"GET", "overview", overview},
    Route{"GET", "history", history},
    Route{"GET", "streams", list_streams},
    Route{"POST", "streams", create_stream},
    Route{"GET", "streams/{}", describe_stream},
    Route{"DELETE", "streams/{}", delete_stream},
    Route{"GET", "streams/{}/partitions/{}", partition_bounds},
    Route{"POST", "streams/{}/partitions/{}/trim", trim_partition},
    Route{"POST", "streams/{}/partitions/{}/compact", compact_partition},
    Route{"GET", "streams/{}/records", read_records},
    Route{"POST", "streams/{}/records", produce_records},
    Route{"GET", "streams/{}/offset", offset_at_time},
    Route{"GET", "streams/{}/groups", list_groups},
    Route{"POST", "streams/{}/groups/{}/commit", commit_group},
    Route{"POST", "streams/{}/groups/{}/reset", reset_group},
    Route{"POST", "streams/{}/search", start_search},
    Route{"GET", "searches/{}", search_progress},
    Route{"DELETE", "searches/{}", cancel_search},
    Route{"GET", "streams/{}/export", export_records},
};

// Matches `path` (after the prefix) against `pattern`, collecting the {} segments percent-decoded;
// nullopt when it does not match or a segment does not decode.
std::optional<std::vector<std::string>> match(std::string_view pattern, std::string_view path) {
  std::vector<std::string> params;
  while (true) {
    const size_t ps = pattern.find('/');
    const size_t qs = path.find('/');
    const std::string_view want = pattern.substr(0, ps);
    const std::string_view got = path.substr(0, qs);
    if (want == "{}") {
      auto decoded = percent_decode(got, false);
      if (!decoded || decoded->empty()) return std::nullopt;
      params.push_back(std::move(*decoded));
    } else if (want != got) {
      return std::nullopt;
    }
    if ((ps == std::string_view::npos) != (qs == std::string_view::npos)) return std::nullopt;
    if (ps == std::string_view::npos) return params;
    pattern.remove_prefix(ps + 1);
    path.remove_prefix(qs + 1);
  }
}

HttpResponse plain(int status, std::string text) { return HttpResponse(status, "text/plain; charset=utf-8", text + "\n"); }

// The API's worker pool, which can be stopped before the broker closes: stop() runs what is queued,
// joins the threads, and from then on drops what is posted (at shutdown nobody waits for it).
class StoppableWorkers final : public Executor {
 public:
  explicit StoppableWorkers(unsigned threads) : pool_(std::make_unique<ThreadPool>(threads)) {}
  void post(std::function<void()> task) override {
    std::lock_guard lock(mu_);
    if (pool_) pool_->post(std::move(task));
  }
  void stop() {
    std::unique_ptr<ThreadPool> pool;
    {
      std::lock_guard lock(mu_);
      pool = std::move(pool_);
    }
    pool.reset();  // outside the lock: its last tasks may post (and be dropped)
  }

 private:
  std::mutex mu_;
  std::unique_ptr<ThreadPool> pool_;
};

}  // namespace

bool require(const Call& call, auth::Right right, std::string_view stream, std::string_view operation) {
  if (call->principal.allows(right, stream)) return true;
  call->denied(operation, stream, auth::right_name(right));
  return false;
}

bool require_any(const Call& call, std::string_view stream, std::string_view operation) {
  if (call->principal.allows_any(stream)) return true;
  call->denied(operation, stream, "any");
  return false;
}

std::optional<JsonValue> json_body(const Call& call) {
  auto parsed = parse_json(call->request.body);
  if (!parsed.ok()) {
    call->error(parsed.status());
    return std::nullopt;
  }
  if (!parsed->is_object()) {
    call->error(Status(Code::kProtocolError, "the request body must be a JSON object", {{"reason", "not an object"}}));
    return std::nullopt;
  }
  return std::move(*parsed);
}

struct HttpApi::Impl {
  Impl(Broker& b, Executor& blocking, Scheduler& s, MetricsRegistry& m, const auth::Authenticator& a, ApiOptions o,
       std::chrono::steady_clock::time_point started)
      : auth(a),
        options(std::move(o)),
        workers(kWorkers),
        history(History::counters_of(m)),
        tails(b, workers, s),
        requests_ok(m.counter("streamd_http_requests_total", "HTTP API and console requests answered, by status class",
                              {{"class", "2xx"}})),
        requests_refused(m.counter("streamd_http_requests_total",
                                   "HTTP API and console requests answered, by status class", {{"class", "4xx"}})),
        requests_failed(m.counter("streamd_http_requests_total",
                                  "HTTP API and console requests answered, by status class", {{"class", "5xx"}})),
        ctx{b,
            workers,
            blocking,
            s,
            m,
            history,
            scans,
            tails,
            options,
            started,
            m.counter("streamd_http_appended_records_total", "Records appended through the HTTP API"),
            m.counter("streamd_http_appended_bytes_total", "Key and payload bytes appended through the HTTP API"),
            m.counter("streamd_http_read_records_total", "Records returned by the HTTP API's reads"),
            m.counter("streamd_http_read_bytes_total", "Key and payload bytes returned by the HTTP API's reads")} {
    history.start(s, workers, b);
  }

  // The reply every answer goes through: security headers, and counted by class. It may run after
  // the API stopped (an append answered by the storage), so it holds the registry's counters only.
  HttpServer::Reply wrap(HttpServer::Reply reply, bool tls) {
    return [&ok = requests_ok, &refused = requests_refused, &failed = requests_failed, reply = std::move(reply),
            tls](HttpResponse response) {
      add_security_headers(response, tls);
      (response.status < 400 ? ok : response.status < 500 ? refused : failed).inc();
      reply(std::move(response));
    };
  }

  void handle(HttpRequest request, HttpServer::Reply raw_reply) {
    HttpServer::Reply reply = wrap(std::move(raw_reply), request.tls);
    if (!request.loopback_listener && !auth.enabled()) {
      return reply(plain(403, "the console and the HTTP API are off on a listener that is not loopback while no "
                              "access file (auth.token_file) is set"));
    }
    if (!host_allowed(request.header("Host"), options.allowed_hosts, auth.enabled())) {
      // A page on another name reaching this listener (DNS rebinding) must not drive the broker.
      return reply(plain(400, "the Host header names no name of this broker; add it to console.allowed_hosts"));
    }
    if (request.path == "/" || request.path == "/ui") {
      return reply(HttpResponse(302, "text/plain; charset=utf-8", "/ui/\n", {{"Location", "/ui/"}}));
    }
    if (request.path.starts_with("/ui/")) return serve_asset(request, reply);
    if (request.method != "GET" && request.method != "HEAD" && request.method != "POST" && request.method != "DELETE") {
      return reply(error_response(Status(Code::kProtocolError, "the HTTP API takes GET, POST and DELETE",
                                         {{"method", request.method}})));
    }
    if (request.method == "POST" || request.method == "DELETE") {
      if (auto why = refuse_change(request)) {
        return reply(error_response(Status(Code::kPermissionDenied, *why, {{"operation", "http"}})));
      }
    }
    const std::string_view path = std::string_view(request.path).substr(kApiPrefix.size());
    if (path == "session") return session(std::move(request), reply);

    auto call = std::make_shared<ApiCall>();
    auto query = parse_query(request.query);
    if (!query) return reply(error_response(bad_argument("query", "a query parameter has a bad % escape")));
    call->query = std::move(*query);
    auto principal = authenticate(request);
    if (!principal.ok()) return reply(error_response(principal.status()));
    call->principal = std::move(*principal);
    call->reply = reply;
    const Route* found = nullptr;
    bool path_known = false;
    for (const Route& route : kRoutes) {
      auto params = match(route.pattern, path);
      if (!params) continue;
      path_known = true;
      if (route.method == request.method || (route.method == "GET" && request.method == "HEAD")) {
        found = &route;
        call->params = std::move(*params);
        break;
      }
    }
    if (found == nullptr) {
      return reply(path_known ? error_response(Status(Code::kProtocolError, "this path takes another method",
                                                      {{"method", request.method}}))
                              : error_response(Status(Code::kProtocolError, "no such API path",
                                                      {{"path", std::string(request.path)}})));
    }
    if (request.method != "GET" && request.method != "HEAD") {
      spdlog::info("http api: {} {} by {} from {}", request.method, request.path,
                   call->principal.name().empty() ? "(no access file)" : call->principal.name(), request.peer);
    }
    call->request = std::move(request);
    found->handler(ctx, call);
  }

  // The request's principal: unrestricted without an access file, else its bearer token's or its
  // session's; UNAUTHENTICATED otherwise.
  Result<auth::Principal> authenticate(const HttpRequest& request) {
    if (!auth.enabled()) return auth::Principal::unrestricted();
    if (request.bearer) {
      auto p = auth.resolve(auth::Proof::token(*request.bearer));
      if (!p) return Status::of(Code::kUnauthenticated, {{"reason", "the bearer token is not known"}});
      return std::move(*p);
    }
    if (auto id = session_id(request)) {
      if (auto proof = sessions.find(*id)) {
        if (auto p = auth.resolve(*proof)) return std::move(*p);
        sessions.remove(*id);  // the access file no longer knows the login
      }
      return Status::of(Code::kUnauthenticated, {{"reason", "the session has ended; log in again"}});
    }
    return Status::of(Code::kUnauthenticated, {{"reason", "log in, or send Authorization: Bearer TOKEN"}});
  }

  static std::optional<std::string> session_id(const HttpRequest& request) {
    auto header = request.header("Cookie");
    if (!header) return std::nullopt;
    auto id = cookie_value(*header, kSessionCookie);
    if (!id || id->empty()) return std::nullopt;
    return std::string(*id);
  }

  std::string cookie(const std::string& value, bool tls, bool clear) const {
    std::string c = std::string(kSessionCookie) + "=" + value + "; Path=/; HttpOnly; SameSite=Strict";
    if (tls) c += "; Secure";
    c += clear ? "; Max-Age=0" : "; Max-Age=" + std::to_string(std::chrono::seconds(SessionStore::kLifetime).count());
    return c;
  }

  void session(HttpRequest request, const HttpServer::Reply& reply) {
    if (request.method == "GET" || request.method == "HEAD") return describe_session(request, reply);
    if (request.method == "DELETE") {
      if (auto id = session_id(request)) sessions.remove(*id);
      HttpResponse response = json_response("{\"authenticated\":false}");
      response.headers.emplace_back("Set-Cookie", cookie("", request.tls, true));
      return reply(std::move(response));
    }
    if (request.method != "POST") {
      return reply(error_response(Status(Code::kProtocolError, "this path takes another method", {{"method", request.method}})));
    }
    if (!auth.enabled()) return describe_session(request, reply);
    auto body = parse_json(request.body);
    if (!body.ok()) return reply(error_response(body.status()));
    const JsonValue* user = body->get("user");
    const JsonValue* password = body->get("password");
    const JsonValue* token = body->get("token");
    if (logins >= kMaxLogins) {
      return reply(error_response(Status(Code::kUnavailable, "too many logins at once; try again", {})));
    }
    std::optional<auth::Proof> direct;
    if (token != nullptr && token->is_string()) {
      direct = auth::Proof::token(token->text());
    } else if (user == nullptr || !user->is_string() || password == nullptr || !password->is_string()) {
      return reply(error_response(bad_argument("user", "the body needs {\"user\", \"password\"} or {\"token\"}")));
    }
    auto finish = [this, reply, tls = request.tls, peer = request.peer](std::optional<auth::Proof> proof) {
      std::optional<auth::Principal> principal = proof ? auth.resolve(*proof) : std::nullopt;
      if (!principal) {
        spdlog::warn("http api: a failed console login from {}", peer);
        return reply(error_response(Status::of(Code::kUnauthenticated, {{"reason", "wrong user, password or token"}})));
      }
      spdlog::info("http api: {} logged in to the console from {}", principal->name(), peer);
      HttpResponse response = json_response(session_json(*principal));
      response.headers.emplace_back("Set-Cookie", cookie(sessions.create(std::move(*proof)), tls, false));
      reply(std::move(response));
    };
    if (direct) return finish(std::move(direct));
    // PBKDF2 runs on a worker; the session is made back on the loop, where the store lives.
    ++logins;
    ctx.workers.post([this, table = auth.table(), name = user->text(), secret = password->text(), finish] {
      auto proof = check_password(*table, name, secret);
      loop_post([this, finish, proof = std::move(proof)]() mutable {
        --logins;
        finish(std::move(proof));
      });
    });
  }

  void describe_session(const HttpRequest& request, const HttpServer::Reply& reply) {
    auto principal = authenticate(request);
    if (!principal.ok()) {
      JsonWriter w;
      w.begin_object().field("auth_required", true).field("authenticated", false).field("version", STREAMD_VERSION)
          .end_object();
      return reply(json_response(w.take()));
    }
    reply(json_response(session_json(*principal)));
  }

  std::string session_json(const auth::Principal& p) const {
    JsonWriter w;
    w.begin_object()
        .field("auth_required", auth.enabled())
        .field("authenticated", true)
        .field("principal", p.name())
        .field("version", STREAMD_VERSION)
        .field("export", options.export_enabled);
    w.key("anywhere")
        .begin_object()
        .field("read_all", p.holds_everywhere(auth::Right::kRead))
        .field("write", p.holds_anywhere(auth::Right::kWrite))
        .field("admin", p.holds_anywhere(auth::Right::kAdmin))
        .end_object();
    w.end_object();
    return w.take();
  }

  void serve_asset(const HttpRequest& request, const HttpServer::Reply& reply) {
    if (request.method != "GET" && request.method != "HEAD") return reply(plain(405, "only GET and HEAD"));
    std::string_view name = std::string_view(request.path).substr(4);
    if (name.empty()) name = "index.html";
    const console::ConsoleAsset* asset = console::find_console_asset(name);
    if (asset == nullptr) return reply(plain(404, "not found"));
    // Revalidated on every load (an upgraded broker serves new files), answered 304 when unchanged.
    if (auto tag = request.header("If-None-Match"); tag && *tag == asset->etag) {
      return reply(HttpResponse(304, std::string(asset->content_type), "",
                                {{"ETag", std::string(asset->etag)}, {"Cache-Control", "no-cache"}}));
    }
    reply(HttpResponse(200, std::string(asset->content_type), std::string(asset->bytes),
                       {{"ETag", std::string(asset->etag)}, {"Cache-Control", "no-cache"}}));
  }

  const auth::Authenticator& auth;
  const ApiOptions options;
  StoppableWorkers workers;
  History history;
  ScanJobs scans;
  Tails tails;
  SessionStore sessions;
  int logins = 0;
  std::shared_ptr<int> alive = std::make_shared<int>(0);  // gone with the Impl: late loop posts do nothing
  std::function<void(std::function<void()>)> loop_post;
  Counter& requests_ok;
  Counter& requests_refused;
  Counter& requests_failed;
  ApiContext ctx;
};

HttpApi::HttpApi(Broker& broker, Executor& blocking, Scheduler& scheduler, MetricsRegistry& metrics,
                 const auth::Authenticator& auth, ApiOptions options, std::chrono::steady_clock::time_point started)
    : impl_(std::make_unique<Impl>(broker, blocking, scheduler, metrics, auth, std::move(options), started)) {
  // Work finished on a worker comes back to the loop through the scheduler, whose callbacks run there.
  impl_->loop_post = [&scheduler, alive = std::weak_ptr<int>(impl_->alive)](std::function<void()> fn) {
    (void)scheduler.schedule_after(std::chrono::milliseconds(0), [alive, fn = std::move(fn)] {
      if (alive.lock()) fn();
    });
  };
}

HttpApi::~HttpApi() { stop(); }

bool HttpApi::serves(std::string_view path) {
  return path == "/" || path == "/ui" || path.starts_with("/ui/") || path.starts_with(kApiPrefix);
}

void HttpApi::handle(HttpRequest request, HttpServer::Reply reply) { impl_->handle(std::move(request), std::move(reply)); }

void HttpApi::stop() {
  if (!impl_) return;
  impl_->tails.stop();
  impl_->scans.stop();
  impl_->history.stop();
  impl_->workers.stop();
}

}  // namespace streamd::http_api
