#include "client/streamctl/app.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "../fake_broker.h"
#include "client/error.h"
#include "streamd.pb.h"

namespace streamd::streamctl {
namespace {

using client::testing::FakeBroker;

struct Run {
  int code;
  std::string out;
  std::string err;
};

Run run(const std::vector<std::string>& args, const std::string& input = "") {
  std::vector<const char*> argv{"streamctl"};
  for (const auto& a : args) argv.push_back(a.c_str());
  std::istringstream in(input);
  std::ostringstream out, err;
  std::atomic<bool> interrupted{false};
  int code = run_streamctl(static_cast<int>(argv.size()), argv.data(), in, out, err, interrupted);
  return {code, out.str(), err.str()};
}

void set_error(v1::Response* response, client::ErrorCode code, std::map<std::string, std::string> fields) {
  client::Error e(code);
  auto* error = response->mutable_error();
  error->set_code(e.code());
  error->set_name(e.name());
  error->set_message(e.message());
  for (auto& [k, v] : fields) (*error->mutable_fields())[k] = v;
}

// A broker with two streams that records the last request it saw.
struct ScriptedBroker {
  std::mutex mutex;
  v1::Request last;
  FakeBroker broker{[this](const v1::Request& request, v1::Response* response) {
    {
      std::lock_guard lock(mutex);
      last = request;
    }
    if (request.has_list_streams()) {
      auto* a = response->mutable_list_streams()->add_streams();
      a->set_name("orders");
      a->set_partitions(12);
      auto* b = response->mutable_list_streams()->add_streams();
      b->set_name("a-much-longer-stream-name");
      b->set_partitions(3);
    } else if (request.has_create_stream()) {
      response->mutable_create_stream()->set_name(request.create_stream().name());
      *response->mutable_create_stream()->mutable_policy() = request.create_stream().policy();
      response->mutable_create_stream()->set_created(true);
    } else if (request.has_alter_stream()) {
      response->mutable_alter_stream()->set_name(request.alter_stream().name());
      response->mutable_alter_stream()->mutable_policy()->set_retain_bytes(request.alter_stream().retain_bytes());
    } else if (request.has_describe_stream()) {
      set_error(response, client::ErrorCode::kStreamNotFound, {{"stream", request.describe_stream().name()}});
    } else if (request.has_committed()) {
      set_error(response, client::ErrorCode::kUnknownGroup, {{"group", request.committed().group()}});
    } else if (request.has_peek()) {
      auto* entry = response->mutable_peek()->mutable_entry();
      entry->set_partition(request.peek().partition());
      entry->set_offset(41);
      entry->set_appended_at_us(1'700'000'000'123'456);
      entry->mutable_record()->set_key("k");
      entry->mutable_record()->set_payload(std::string("\xff\x00", 2));
      auto* h = entry->mutable_record()->add_headers();
      h->set_name("trace");
      h->set_value("abc");
    } else if (request.has_health()) {
      response->mutable_health()->set_status("ok");
      response->mutable_health()->set_version("0.1.0");
      response->mutable_health()->set_uptime_s(5);
      response->mutable_health()->set_streams(2);
    }
    return true;
  }};
  std::string address() const { return "127.0.0.1:" + std::to_string(broker.port()); }
};

TEST_CASE("global flags are accepted before and after the command") {
  ScriptedBroker s;
  const std::string expected =
      R"([{"name":"orders","partitions":12},{"name":"a-much-longer-stream-name","partitions":3}])"
      "\n";
  Run before = run({"--broker", s.address(), "--json", "list"});
  CHECK(before.code == 0);
  CHECK(before.out == expected);
  Run after = run({"list", "--json", "--broker", s.address()});
  CHECK(after.code == 0);
  CHECK(after.out == expected);
}

TEST_CASE("STREAMD_BROKER names the broker when --broker does not") {
  ScriptedBroker s;
  ::setenv("STREAMD_BROKER", s.address().c_str(), 1);
  Run r = run({"health", "--json"});
  ::unsetenv("STREAMD_BROKER");
  CHECK(r.code == 0);
  CHECK(r.out == R"({"status":"ok","version":"0.1.0","uptime_s":5,"streams":2})"
                 "\n");
}

TEST_CASE("the token of --token, else STREAMD_TOKEN, is sent in Hello") {
  ScriptedBroker s;
  REQUIRE(run({"health", "--token", "secret-1", "--broker", s.address()}).code == 0);
  CHECK(s.broker.last_hello() == std::pair<std::string, std::string>{"streamctl", "secret-1"});
  ::setenv("STREAMD_TOKEN", "secret-2", 1);
  Run r = run({"health", "--broker", s.address()});
  ::unsetenv("STREAMD_TOKEN");
  REQUIRE(r.code == 0);
  CHECK(s.broker.last_hello().second == "secret-2");
}

TEST_CASE("list prints an aligned table") {
  ScriptedBroker s;
  Run r = run({"list", "--broker", s.address()});
  CHECK(r.code == 0);
  CHECK(r.out ==
        "NAME                       PARTITIONS\n"
        "orders                             12\n"
        "a-much-longer-stream-name           3\n");
}

TEST_CASE("create sends every policy flag, durations parsed") {
  ScriptedBroker s;
  Run r = run({"create",          "orders", "--partitions",    "8",        "--max-record-bytes", "2048",
               "--retain-for",    "1h30m",  "--retain-bytes",  "100",      "--max-bytes",        "4096",
               "--block-timeout", "500ms",  "--segment-bytes", "65536",    "--compact-after",    "7d",
               "--timestamp-type", "LogAppendTime", "--if-not-exists", "--json", "--broker", s.address()});
  REQUIRE(r.code == 0);
  std::lock_guard lock(s.mutex);
  const auto& c = s.last.create_stream();
  CHECK(c.name() == "orders");
  CHECK(c.if_not_exists());
  CHECK(c.policy().partitions() == 8);
  CHECK(c.policy().retain_for_ms() == 5'400'000);
  CHECK(c.policy().block_timeout_ms() == 500);
  CHECK(c.policy().compact_after_ms() == 604'800'000);
  CHECK(c.policy().timestamp_type() == v1::TIMESTAMP_TYPE_LOG_APPEND_TIME);
  CHECK(r.out ==
        R"({"name":"orders","policy":{"partitions":8,"max_record_bytes":2048,"retain_for_ms":5400000,)"
        R"("retain_bytes":100,"max_bytes":4096,"block_timeout_ms":500,"segment_bytes":65536,)"
        R"("compact_after_ms":604800000,"timestamp_type":"LogAppendTime"}})"
        "\n");
}

TEST_CASE("alter sends only the flags given, durations parsed, and --validate-only") {
  ScriptedBroker s;
  Run r = run({"alter", "orders", "--retain-bytes", "100", "--compact-after", "1d", "--timestamp-type",
               "LogAppendTime", "--validate-only", "--json", "--broker", s.address()});
  REQUIRE(r.code == 0);
  {
    std::lock_guard lock(s.mutex);
    const auto& a = s.last.alter_stream();
    CHECK(a.name() == "orders");
    CHECK(a.validate_only());
    CHECK(a.retain_bytes() == 100);
    CHECK(a.compact_after_ms() == 86'400'000);
    CHECK(a.timestamp_type() == v1::TIMESTAMP_TYPE_LOG_APPEND_TIME);
    CHECK(a.has_retain_bytes());
    for (bool given : {a.has_partitions(), a.has_max_record_bytes(), a.has_retain_for_ms(), a.has_max_bytes(),
                       a.has_block_timeout_ms(), a.has_segment_bytes()}) {
      CHECK_FALSE(given);
    }
  }
  CHECK(r.out.rfind(R"({"name":"orders","validate_only":true,"policy":{"partitions":0,)", 0) == 0);
  CHECK(r.out.find(R"("retain_bytes":100,)") != std::string::npos);
}

TEST_CASE("alter with no policy flag is STREAM_MISCONFIGURED and sends nothing") {
  ScriptedBroker s;
  Run r = run({"alter", "orders", "--broker", s.address()});
  CHECK(r.code == 78);
  CHECK(r.err.find("nothing to change") != std::string::npos);
  CHECK(r.err.find("field=policy") != std::string::npos);
  std::lock_guard lock(s.mutex);
  CHECK_FALSE(s.last.has_alter_stream());
}

TEST_CASE("create refuses a timestamp type other than CreateTime or LogAppendTime") {
  Run r = run({"create", "orders", "--timestamp-type", "createtime"});
  CHECK(r.code != 0);
  CHECK(r.err.find("--timestamp-type") != std::string::npos);
}

TEST_CASE("a malformed duration flag is STREAM_MISCONFIGURED naming the flag, exit 78") {
  Run r = run({"create", "orders", "--retain-for", "7 days"});
  CHECK(r.code == 78);
  CHECK(r.err.rfind("streamctl: STREAM_MISCONFIGURED: ", 0) == 0);
  CHECK(r.err.find("field=retain_for") != std::string::npos);
  Run t = run({"--timeout", "fast", "list"});
  CHECK(t.code == 78);
  CHECK(t.err.find("field=timeout") != std::string::npos);
}

TEST_CASE("a broker error prints its line, its JSON with --json, and exits with its code") {
  ScriptedBroker s;
  Run text = run({"describe", "ghost", "--broker", s.address()});
  CHECK(text.code == 66);
  CHECK(text.out.empty());
  CHECK(text.err == "streamctl: STREAM_NOT_FOUND: The stream does not exist (stream=ghost)\n");
  Run json = run({"describe", "ghost", "--json", "--broker", s.address()});
  CHECK(json.code == 66);
  CHECK(json.err ==
        "streamctl: STREAM_NOT_FOUND: The stream does not exist (stream=ghost)\n"
        R"({"error":{"code":262401,"name":"STREAM_NOT_FOUND","message":"The stream does not exist",)"
        R"("fields":{"stream":"ghost"}}})"
        "\n");
  Run group = run({"committed", "orders", "--group", "g", "--partition", "0", "--broker", s.address()});
  CHECK(group.code == 66);
  CHECK(group.err.find("UNKNOWN_GROUP") != std::string::npos);
}

TEST_CASE("peek prints an entry object: text when UTF-8, null otherwise, base64 always") {
  ScriptedBroker s;
  Run r = run({"peek", "orders", "--partition", "2", "--json", "--broker", s.address()});
  CHECK(r.code == 0);
  CHECK(
      r.out ==
      R"({"partition":2,"offset":41,"appended_at":"2023-11-14T22:13:20.123456Z","key":"k","payload":null,)"
      R"("key_b64":"aw==","payload_b64":"/wA=","headers":[{"name":"trace","value":"abc","value_b64":"YWJj"}]})"
      "\n");
}

TEST_CASE("an unreachable broker is UNAVAILABLE, exit 69") {
  uint16_t port;
  {
    FakeBroker gone([](const v1::Request&, v1::Response*) { return true; });
    port = gone.port();
  }
  Run r = run({"list", "--timeout", "200ms", "--broker", "127.0.0.1:" + std::to_string(port)});
  CHECK(r.code == 69);
  CHECK(r.err.rfind("streamctl: UNAVAILABLE: ", 0) == 0);
}

TEST_CASE("usage errors exit 64, every command has --help with an example") {
  CHECK(run({}).code == 64);
  CHECK(run({"create"}).code == 64);
  CHECK(run({"peek", "orders"}).code == 64);
  CHECK(run({"trim", "orders", "--partition", "0", "--before", "minus"}).code == 64);
  for (const char* command :
       {"create", "delete", "list", "describe", "produce", "consume", "bounds", "peek", "commit", "committed",
        "groups", "seek", "trim", "compact", "health", "bench"}) {
    INFO(command);
    Run help = run({command, "--help"});
    CHECK(help.code == 0);
    CHECK(help.out.find("Example") != std::string::npos);
  }
}

TEST_CASE("a bad broker address is STREAM_MISCONFIGURED naming broker") {
  Run r = run({"list", "--broker", "nowhere"});
  CHECK(r.code == 78);
  CHECK(r.err.find("field=broker") != std::string::npos);
}

}  // namespace
}  // namespace streamd::streamctl
