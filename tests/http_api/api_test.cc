// /api/v1 against the real daemon, without an access file (every right): each endpoint, each
// refusal with its error name and HTTP status, and that a refused request changes nothing.
#include <catch2/catch.hpp>
#include <thread>

#include "server/http_api/json.h"
#include "tests/http_api/http_client.h"

namespace streamd::testing {
namespace {

using http_api::JsonValue;

JsonValue json_of(const HttpAnswer& a) {
  INFO(a.status << " " << a.body);
  auto v = http_api::parse_json(a.body);
  REQUIRE(v.ok());
  return std::move(*v);
}

std::string error_name(const HttpAnswer& a) {
  auto v = http_api::parse_json(a.body);
  if (!v.ok() || v->get("error") == nullptr) return "(no error: " + a.body + ")";
  return v->get("error")->get("name")->text();
}

std::string error_field(const HttpAnswer& a, const char* field) {
  auto v = http_api::parse_json(a.body);
  if (!v.ok() || v->get("error") == nullptr) return {};
  const JsonValue* f = v->get("error")->get("fields")->get(field);
  return f == nullptr ? std::string() : f->text();
}

struct Api {
  explicit Api(std::vector<std::string> args = {}) : daemon(std::move(args)) {
    REQUIRE(daemon.start());
    client = std::make_unique<HttpClient>(daemon.http_port());
  }
  DaemonProcess daemon;
  std::unique_ptr<HttpClient> client;
};

TEST_CASE("streams: create, list with paging and filter, describe, delete", "[http_api]") {
  Api api;
  HttpClient& c = *api.client;
  auto created = c.post("/api/v1/streams", R"({"name":"orders","policy":{"partitions":3,"retain_for":"7d"}})");
  REQUIRE(created.status == 201);
  CHECK(json_of(created).get("policy")->u64_of("retain_for_ms") == 7ull * 86400 * 1000);
  auto again = c.post("/api/v1/streams", R"({"name":"orders"})");
  CHECK(again.status == 409);
  CHECK(error_name(again) == "STREAM_EXISTS");
  CHECK(c.post("/api/v1/streams", R"({"name":"orders","if_not_exists":true})").status == 200);
  for (int i = 0; i < 12; ++i) REQUIRE(c.post("/api/v1/streams", R"({"name":"s)" + std::to_string(100 + i) + "\"}").status == 201);

  auto page = json_of(c.get("/api/v1/streams?limit=5&offset=5"));
  CHECK(page.u64_of("total") == 13);
  REQUIRE(page.get("streams")->items().size() == 5);
  CHECK(page.get("streams")->items()[0].get("name")->text() == "s104");
  auto filtered = json_of(c.get("/api/v1/streams?filter=der"));
  REQUIRE(filtered.get("streams")->items().size() == 1);
  CHECK(filtered.get("streams")->items()[0].u64_of("partitions") == 3);

  auto described = json_of(c.get("/api/v1/streams/orders"));
  CHECK(described.get("partitions")->items().size() == 3);
  CHECK(described.get("rights")->get("admin")->boolean());
  CHECK(c.del("/api/v1/streams/orders").status == 200);
  auto gone = c.get("/api/v1/streams/orders");
  CHECK(gone.status == 404);
  CHECK(error_name(gone) == "STREAM_NOT_FOUND");
  CHECK(c.del("/api/v1/streams/orders").status == 404);
  // One keep-alive connection carried all of it.
  CHECK(c.connections() == 1);
}

TEST_CASE("records: produce with keys and headers, read back as text and base64", "[http_api]") {
  Api api;
  HttpClient& c = *api.client;
  REQUIRE(c.post("/api/v1/streams", R"({"name":"ev","policy":{"partitions":2}})").status == 201);
  auto appended = c.post("/api/v1/streams/ev/records",
                         R"({"records":[{"key":"k","payload":"<script>alert(1)</script>","headers":[{"name":"h","value":"v"}]},
                                        {"key":"k","payload_b64":"AP8="}]})");
  REQUIRE(appended.status == 200);
  auto at = json_of(appended);
  CHECK(at.u64_of("first") == 0);
  CHECK(at.u64_of("last") == 1);
  const uint64_t partition = *at.u64_of("partition");

  auto page = json_of(c.get("/api/v1/streams/ev/records?from=earliest"));
  CHECK(page.get("order")->text() == "oldest");
  REQUIRE(page.get("records")->items().size() == 2);
  const JsonValue& first = page.get("records")->items()[0];
  CHECK(first.get("payload")->text() == "<script>alert(1)</script>");
  CHECK(first.get("headers")->items()[0].get("value")->text() == "v");
  CHECK(first.u64_of("partition") == partition);
  const JsonValue& binary = page.get("records")->items()[1];
  CHECK(binary.get("payload")->is_null());  // not UTF-8: base64 only
  CHECK(binary.get("payload_b64")->text() == "AP8=");
  // The answer never carries raw markup: the JSON escapes it.
  CHECK(c.get("/api/v1/streams/ev/records?from=earliest").body.find("<script>") == std::string::npos);

  // Newest first by default from the latest; an offset; a time; a partition of its own.
  CHECK(json_of(c.get("/api/v1/streams/ev/records")).get("records")->items()[0].u64_of("offset") == 1);
  const std::string p = std::to_string(partition);
  auto one = json_of(c.get("/api/v1/streams/ev/records?partition=" + p + "&from=1&order=oldest&limit=1"));
  CHECK(one.get("records")->items().size() == 1);
  auto offset = json_of(c.get("/api/v1/streams/ev/offset?partition=" + p + "&time=2000-01-01T00:00:00Z"));
  CHECK(offset.u64_of("offset") == 0);
  auto bounds = json_of(c.get("/api/v1/streams/ev/partitions/" + p));
  CHECK(bounds.u64_of("next") == 2);

  // A chosen partition takes unkeyed records; a keyed one elsewhere is PARTITIONS_MIXED.
  const std::string other = partition == 0 ? "1" : "0";
  CHECK(c.post("/api/v1/streams/ev/records", R"({"partition":)" + other + R"(,"records":[{"payload":"x"}]})").status == 200);
  auto mixed = c.post("/api/v1/streams/ev/records", R"({"partition":)" + other + R"(,"records":[{"key":"k","payload":"x"}]})");
  CHECK(mixed.status == 400);
  CHECK(error_name(mixed) == "PARTITIONS_MIXED");
}

TEST_CASE("trim, compact and groups: commit, lag, reset with a dry run", "[http_api]") {
  Api api;
  HttpClient& c = *api.client;
  REQUIRE(c.post("/api/v1/streams", R"({"name":"g","policy":{"partitions":1}})").status == 201);
  std::string batch = R"({"records":[)";
  for (int i = 0; i < 10; ++i) batch += std::string(i ? "," : "") + R"({"payload":"r)" + std::to_string(i) + "\"}";
  REQUIRE(c.post("/api/v1/streams/g/records", batch + "]}").status == 200);
  REQUIRE(c.post("/api/v1/streams/g/groups/billing/commit", R"({"partition":0,"next":4})").status == 200);
  auto groups = json_of(c.get("/api/v1/streams/g/groups"));
  const JsonValue& billing = groups.get("groups")->items().at(0);
  CHECK(billing.get("group")->text() == "billing");
  CHECK(billing.u64_of("lag") == 6);
  CHECK(billing.get("partitions")->items()[0].get("lag_seconds")->type() == JsonValue::Type::kNumber);

  auto preview = json_of(c.post("/api/v1/streams/g/groups/billing/reset", R"({"to":"latest","dry_run":true})"));
  CHECK(preview.get("plan")->items()[0].u64_of("from") == 4);
  CHECK(preview.get("plan")->items()[0].u64_of("to") == 10);
  CHECK(json_of(c.get("/api/v1/streams/g/groups")).get("groups")->items()[0].u64_of("lag") == 6);  // unchanged
  auto unconfirmed = c.post("/api/v1/streams/g/groups/billing/reset", R"({"to":"latest","dry_run":false})");
  CHECK(unconfirmed.status == 400);
  CHECK(error_field(unconfirmed, "field") == "confirm");
  REQUIRE(c.post("/api/v1/streams/g/groups/billing/reset", R"({"to":"offset","offset":7,"dry_run":false,"confirm":"billing"})")
              .status == 200);
  CHECK(json_of(c.get("/api/v1/streams/g/groups")).get("groups")->items()[0].u64_of("lag") == 3);
  auto ahead = c.post("/api/v1/streams/g/groups/billing/reset", R"({"to":"offset","offset":99,"dry_run":true})");
  CHECK(ahead.status == 409);
  CHECK(error_name(ahead) == "OFFSET_AHEAD");

  auto trimmed = json_of(c.post("/api/v1/streams/g/partitions/0/trim", R"({"before":3})"));
  CHECK(trimmed.u64_of("first") == 3);
  auto below = c.get("/api/v1/streams/g/records?cursor=0:1");
  CHECK(below.status == 409);
  CHECK(error_name(below) == "OFFSET_TRIMMED");
  CHECK(c.post("/api/v1/streams/g/partitions/0/compact", "{}").status == 200);
}

TEST_CASE("refusals carry the native error's name and fields, and change nothing", "[http_api]") {
  Api api;
  HttpClient& c = *api.client;
  REQUIRE(c.post("/api/v1/streams", R"({"name":"r","policy":{"max_record_bytes":1024}})").status == 201);
  struct Case {
    const char* method;
    std::string path;
    std::string body;
    int status;
    const char* name;
  };
  const Case cases[] = {
      {"POST", "/api/v1/streams", R"({"name":"bad name!"})", 400, "STREAM_MISCONFIGURED"},
      {"POST", "/api/v1/streams", R"({"name":"p","policy":{"partitions":-2}})", 400, "STREAM_MISCONFIGURED"},
      {"POST", "/api/v1/streams", R"({"name":"p","policy":{"max_bytes":5}})", 400, "STREAM_MISCONFIGURED"},
      {"POST", "/api/v1/streams", R"({"name":)", 400, "PROTOCOL_ERROR"},
      {"POST", "/api/v1/streams", R"([1,2])", 400, "PROTOCOL_ERROR"},
      {"POST", "/api/v1/streams/r/records", R"({"records":[]})", 400, "INVALID_BATCH_SIZE"},
      {"POST", "/api/v1/streams/r/records", R"({"records":[{"payload":")" + std::string(2000, 'x') + "\"}]}", 413,
       "RECORD_TOO_LARGE"},
      {"POST", "/api/v1/streams/r/records", R"({"records":[{"payload_b64":"***"}]})", 400, "STREAM_MISCONFIGURED"},
      {"POST", "/api/v1/streams/r/records", R"({"partition":7,"records":[{"payload":"x"}]})", 400, "UNKNOWN_PARTITION"},
      {"GET", "/api/v1/streams/r/records?cursor=0:5", "", 409, "OFFSET_AHEAD"},
      {"GET", "/api/v1/streams/r/records?limit=0", "", 400, "INVALID_BATCH_SIZE"},
      {"GET", "/api/v1/streams/r/records?from=yesterday", "", 400, "STREAM_MISCONFIGURED"},
      {"GET", "/api/v1/streams/r/partitions/3", "", 400, "UNKNOWN_PARTITION"},
      {"GET", "/api/v1/streams/nope/records", "", 404, "STREAM_NOT_FOUND"},
      {"POST", "/api/v1/streams/r/groups/g/commit", R"({"partition":0,"next":9})", 409, "OFFSET_AHEAD"},
      {"POST", "/api/v1/streams/r/groups/g/commit", R"({"partition":0})", 400, "STREAM_MISCONFIGURED"},
      {"POST", "/api/v1/streams/r/partitions/0/trim", R"({"before":9})", 409, "OFFSET_AHEAD"},
      {"GET", "/api/v1/nothing/here", "", 400, "PROTOCOL_ERROR"},
      {"PUT", "/api/v1/streams", "{}", 400, "PROTOCOL_ERROR"},
      {"DELETE", "/api/v1/streams", "", 400, "PROTOCOL_ERROR"},
      {"GET", "/api/v1/searches/ffff", "", 404, "STREAM_NOT_FOUND"},
  };
  for (const Case& k : cases) {
    INFO(k.method << " " << k.path << " " << k.body.substr(0, 80));
    auto a = c.request(k.method, k.path, k.body, {{"Content-Type", "application/json"}});
    CHECK(a.status == k.status);
    CHECK(error_name(a) == k.name);
    CHECK(a.header("Content-Type") == "application/json");
  }
  // Nothing was written, nothing created, and the broker still serves.
  auto d = json_of(c.get("/api/v1/streams/r"));
  CHECK(d.get("partitions")->items()[0].u64_of("next") == 0);
  CHECK(json_of(c.get("/api/v1/streams")).u64_of("total") == 1);
  CHECK(api.daemon.http_get("/metrics").status == 200);
}

TEST_CASE("a live tail answers as soon as another client appends", "[http_api]") {
  Api api;
  HttpClient& c = *api.client;
  REQUIRE(c.post("/api/v1/streams", R"({"name":"t","policy":{"partitions":2}})").status == 201);
  auto empty = json_of(c.get("/api/v1/streams/t/records"));
  const std::string tail = empty.get("tail")->text();
  CHECK(tail == "0:0,1:0");
  // Nothing arrives: the deadline answers an empty page with the same cursor.
  auto quiet = json_of(c.get("/api/v1/streams/t/records?cursor=" + tail + "&wait_ms=200"));
  CHECK(quiet.get("records")->items().empty());
  CHECK(quiet.get("more")->text() == tail);

  std::thread producer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    HttpClient other(api.daemon.http_port());
    CHECK(other.post("/api/v1/streams/t/records", R"({"records":[{"payload":"late"}]})").status == 200);
  });
  const auto began = std::chrono::steady_clock::now();
  auto woke = json_of(c.get("/api/v1/streams/t/records?cursor=" + tail + "&wait_ms=20000"));
  const auto waited = std::chrono::steady_clock::now() - began;
  producer.join();
  REQUIRE(woke.get("records")->items().size() == 1);
  CHECK(woke.get("records")->items()[0].get("payload")->text() == "late");
  CHECK(waited < std::chrono::seconds(10));  // woken by the append, not by the 20 s deadline
  CHECK(c.get("/api/v1/streams/t/records?wait_ms=100").status == 400);  // a tail follows a cursor
}

TEST_CASE("search scans with a budget and reports progress, and export streams NDJSON", "[http_api]") {
  Api api;
  HttpClient& c = *api.client;
  REQUIRE(c.post("/api/v1/streams", R"({"name":"big","policy":{"partitions":2}})").status == 201);
  for (int b = 0; b < 20; ++b) {
    std::string batch = R"({"records":[)";
    for (int i = 0; i < 100; ++i) {
      const int n = b * 100 + i;
      batch += std::string(i ? "," : "") + R"({"payload":")" + (n == 1234 ? "the needle" : "hay " + std::to_string(n)) + "\"}";
    }
    REQUIRE(c.post("/api/v1/streams/big/records", batch + "]}").status == 200);
  }
  auto started = c.post("/api/v1/streams/big/search", R"({"query":"needle"})");
  REQUIRE(started.status == 202);
  const std::string id = json_of(started).get("id")->text();
  JsonValue p;
  for (int i = 0; i < 200; ++i) {
    p = json_of(c.get("/api/v1/searches/" + id));
    if (p.get("done")->boolean()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  REQUIRE(p.get("done")->boolean());
  CHECK(p.get("stopped_by")->text() == "end");
  CHECK(p.u64_of("scanned") == 2000);
  REQUIRE(p.get("records")->items().size() == 1);
  CHECK(p.get("records")->items()[0].get("payload")->text() == "the needle");

  auto limited = json_of(c.post("/api/v1/streams/big/search", R"({"query":"nothing","max_records":500})"));
  const std::string lid = limited.get("id")->text();
  for (int i = 0; i < 200 && !limited.get("done")->boolean(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    limited = json_of(c.get("/api/v1/searches/" + lid));
  }
  CHECK(limited.get("stopped_by")->text() == "max_records");
  CHECK(limited.u64_of("scanned") == 500);
  CHECK(c.post("/api/v1/streams/big/search", R"({"query":""})").status == 400);
  // Cancelling: the search says so (a finished one stays finished), an unknown one is 404.
  auto cancelled = json_of(c.del("/api/v1/searches/" + lid));
  CHECK(cancelled.get("cancelled")->boolean());
  CHECK(c.del("/api/v1/searches/0123456789abcdef").status == 404);

  auto exported = c.get("/api/v1/streams/big/export?partition=0");
  REQUIRE(exported.status == 200);
  CHECK(exported.header("Content-Type") == "application/x-ndjson");
  CHECK(exported.header("Transfer-Encoding") == "chunked");
  size_t lines = 0;
  for (char ch : exported.body) lines += ch == '\n' ? 1 : 0;
  auto bounds = json_of(c.get("/api/v1/streams/big/partitions/0"));
  CHECK(lines == bounds.u64_of("next"));
  auto all = c.get("/api/v1/streams/big/export?max_records=1500");
  size_t all_lines = 0;
  for (char ch : all.body) all_lines += ch == '\n' ? 1 : 0;
  CHECK(all_lines == 1500);
  // The connection is still good after a chunked answer.
  CHECK(c.get("/api/v1/health").status == 200);
}

TEST_CASE("export can be turned off", "[http_api]") {
  Api api({"--console.export", "false"});
  REQUIRE(api.client->post("/api/v1/streams", R"({"name":"x"})").status == 201);
  auto refused = api.client->get("/api/v1/streams/x/export");
  CHECK(refused.status == 403);
  CHECK(error_field(refused, "setting") == "console.export");
  CHECK_FALSE(json_of(api.client->get("/api/v1/session")).get("export")->boolean());
}

TEST_CASE("the overview and history report the broker's own rates", "[http_api]") {
  Api api;
  HttpClient& c = *api.client;
  REQUIRE(c.post("/api/v1/streams/auto/records", R"({"records":[{"payload":"a"},{"payload":"b"}]})").status == 200);
  JsonValue o;
  // The history samples once a second: wait for a sample that saw the append.
  double appended = 0;
  for (int i = 0; i < 40 && appended == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    o = json_of(c.get("/api/v1/overview"));
    for (const JsonValue& v : o.get("rates")->get("append_records")->items()) appended += std::stod(v.text());
  }
  CHECK(appended > 0);
  CHECK(o.get("version")->text() == STREAMD_VERSION);
  CHECK(o.u64_of("streams") == 1);
  CHECK(o.get("engine")->text() == "file");
  CHECK(o.get("connections")->u64_of("http") >= 1);
  CHECK(json_of(c.get("/api/v1/health")).get("status")->text() == "ok");
  auto h = json_of(c.get("/api/v1/history?since=0"));
  CHECK(h.u64_of("interval_ms") == 1000);
}

TEST_CASE("the console's files are served from the binary with their policy", "[http_api]") {
  Api api;
  HttpClient& c = *api.client;
  auto index = c.get("/ui/");
  REQUIRE(index.status == 200);
  CHECK(index.header("Content-Type") == "text/html; charset=utf-8");
  CHECK(index.header("Content-Security-Policy").find("script-src 'self'") != std::string::npos);
  CHECK(index.header("X-Content-Type-Options") == "nosniff");
  CHECK(index.body.find("<script type=\"module\" src=\"app.js\">") != std::string::npos);
  const std::string etag = index.header("ETag");
  CHECK_FALSE(etag.empty());
  CHECK(c.request("GET", "/ui/index.html", "", {{"If-None-Match", etag}}).status == 304);
  CHECK(c.get("/ui/app.js").header("Content-Type") == "text/javascript; charset=utf-8");
  CHECK(c.get("/ui/missing.js").status == 404);
  auto root = c.get("/");
  CHECK(root.status == 302);
  CHECK(root.header("Location") == "/ui/");
  // No inline script anywhere: every script is a file of this origin.
  CHECK(index.body.find("<script>") == std::string::npos);
}

TEST_CASE("the console can be turned off, leaving the operations endpoints", "[http_api]") {
  Api api({"--console.enabled", "false"});
  CHECK(api.client->get("/api/v1/health").status == 404);
  CHECK(api.client->get("/ui/").status == 404);
  CHECK(api.client->get("/healthz").status == 200);
}

}  // namespace
}  // namespace streamd::testing
