// The checks every /api and /ui request passes before anything else looks at it (http_api.h lists
// them and docs/HTTP.md §Security says why): the Host it names, where a change comes from, and the
// headers every answer carries. Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/net/http_message.h"

namespace streamd::http_api {

// The Content-Security-Policy of every /ui and /api answer: this origin's scripts and styles only,
// no inline script, no framing, no requests elsewhere.
inline constexpr std::string_view kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; manifest-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

// The host of a Host header without its port ("[::1]:7412" → "[::1]"), lower-cased.
std::string host_name(std::string_view host_header);
// localhost, 127.0.0.0/8 or [::1].
bool is_loopback_name(std::string_view host);
// Whether a request naming `host_header` may be served: a loopback name, one of `allowed`, or any
// name when `any` (an access file is in force).
bool host_allowed(std::optional<std::string_view> host_header, const std::vector<std::string>& allowed, bool any);

// Why a change (POST, DELETE) may not be made from where it came, or nullopt when it may: a foreign
// or opaque Origin, a cross-site fetch, a POST that is not application/json.
std::optional<std::string> refuse_change(const HttpRequest& request);

// The security headers of docs/HTTP.md §"Headers on every answer", added to `response`.
void add_security_headers(HttpResponse& response, bool tls);

}  // namespace streamd::http_api
