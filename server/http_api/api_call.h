// ApiCall: one request to /api/v1 once the router has authenticated it and matched its route — the
// principal, the decoded path parameters and query, the body — and the one way to answer it: JSON,
// or an error in the native protocol's shape (docs/HTTP.md §Errors), whose HTTP status comes from
// the error table (proto/error_codes.h). Handlers hold it by shared_ptr and may answer from any
// thread, once.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/auth/principal.h"
#include "server/http_api/json.h"
#include "server/net/http_server.h"
#include "server/storage/status.h"

namespace streamd::http_api {

struct ApiCall {
  HttpRequest request;
  std::vector<std::string> params;  // the route's {…} segments, percent-decoded, in order
  std::map<std::string, std::string, std::less<>> query;
  auth::Principal principal = auth::Principal::unrestricted();
  HttpServer::Reply reply;

  // A query parameter, or nullopt when absent.
  std::optional<std::string_view> arg(std::string_view name) const;

  void json(std::string body, int status = 200) const;
  void error(const Status& status) const;
  // PERMISSION_DENIED with the native protocol's fields (docs/SECURITY.md).
  void denied(std::string_view operation, std::string_view stream, std::string_view right) const;
};

using Call = std::shared_ptr<ApiCall>;

// {"error":{"code","name","message","fields"}}: the native protocol's error, as streamctl --json
// prints it.
std::string error_json(const Status& status);
HttpResponse error_response(const Status& status);
HttpResponse json_response(std::string body, int status = 200);

// "%41b" → "Ab"; nullopt for a bad escape. With `plus_is_space` (a query), '+' is a blank.
std::optional<std::string> percent_decode(std::string_view text, bool plus_is_space);
// "a=1&b=x%20y" → {a:1, b:"x y"}; nullopt when an escape is bad.
std::optional<std::map<std::string, std::string, std::less<>>> parse_query(std::string_view query);

// Reads a query or body integer, or refuses with STREAM_MISCONFIGURED naming the field.
Result<uint64_t> parse_u64(std::string_view field, std::string_view text);
Result<int64_t> parse_i64(std::string_view field, std::string_view text);
Status bad_argument(std::string_view field, std::string message);

}  // namespace streamd::http_api
