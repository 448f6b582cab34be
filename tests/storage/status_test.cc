#include "server/storage/status.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>

namespace streamd {
namespace {

struct Row {
  const char* name;
  uint32_t code;
  int http;
  int exit;
};

// docs/SEMANTICS.md §4, copied by hand so a slip in error_codes.h shows up as a difference.
constexpr Row kSpecTable[] = {
    {"STREAM_MISCONFIGURED", 0x00022601, 400, 78},
    {"RECORD_TOO_LARGE", 0x00022602, 413, 78},
    {"OFFSET_TRIMMED", 0x00022603, 409, 65},
    {"OFFSET_AHEAD", 0x00022604, 409, 65},
    {"UNKNOWN_PARTITION", 0x00022605, 400, 65},
    {"INVALID_BATCH_SIZE", 0x00022606, 400, 78},
    {"STREAM_FULL", 0x00022607, 503, 75},
    {"UNKNOWN_GROUP", 0x00022608, 404, 66},
    {"PARTITIONS_MIXED", 0x00022609, 400, 65},
    {"STREAM_BACKEND_FAILED", 0x00035E01, 500, 74},
    {"STREAM_DIRECTORY_UNUSABLE", 0x00035E02, 500, 78},
    {"SQL_STREAM_MISCONFIGURED", 0x00035E03, 500, 78},
    {"SUBSCRIBER_MISCONFIGURED", 0x00035E04, 400, 78},
    {"STREAM_NOT_FOUND", 0x00040101, 404, 66},
    {"STREAM_EXISTS", 0x00040102, 409, 73},
    {"UNAUTHENTICATED", 0x00040103, 401, 77},
    {"PERMISSION_DENIED", 0x00040104, 403, 77},
    {"PROTOCOL_ERROR", 0x00040105, 400, 76},
    {"FRAME_TOO_LARGE", 0x00040106, 413, 76},
    {"UNAVAILABLE", 0x00040107, 503, 69},
    {"OUT_OF_ORDER_SEQUENCE", 0x00040108, 409, 65},
    {"PRODUCER_FENCED", 0x00040109, 409, 65},
    {"INVALID_TXN_STATE", 0x0004010A, 409, 65},
    {"CONCURRENT_TRANSACTIONS", 0x0004010B, 409, 75},
    {"INVALID_PRODUCER_ID_MAPPING", 0x0004010C, 409, 65},
    {"INVALID_TRANSACTION_TIMEOUT", 0x0004010D, 400, 78},
    {"TRANSACTIONAL_ID_NOT_FOUND", 0x0004010E, 404, 66},
    {"TOO_MANY_TRANSACTIONAL_IDS", 0x0004010F, 503, 75},
};

TEST_CASE("every error row of docs/SEMANTICS.md §4 matches code_info by code and by name") {
  for (const Row& row : kSpecTable) {
    INFO(row.name);
    const CodeInfo* by_code = code_info(static_cast<Code>(row.code));
    REQUIRE(by_code != nullptr);
    CHECK(by_code->name == row.name);
    CHECK(static_cast<uint32_t>(by_code->code) == row.code);
    CHECK(by_code->http_status == row.http);
    CHECK(by_code->exit_code == row.exit);
    CHECK_FALSE(by_code->default_message.empty());

    const CodeInfo* by_name = code_info(std::string_view(row.name));
    REQUIRE(by_name != nullptr);
    CHECK(by_name == by_code);

    Status s = Status::of(static_cast<Code>(row.code));
    CHECK_FALSE(s.ok());
    CHECK(s.raw_code() == row.code);
    CHECK(s.name() == row.name);
    CHECK(s.http_status() == row.http);
    CHECK(s.exit_code() == row.exit);
    CHECK(s.message() == by_code->default_message);
  }
}

TEST_CASE("codes outside the table are unknown") {
  CHECK(code_info(static_cast<Code>(0x00035E7Fu)) == nullptr);  // 0x00035E7F is not one of ours
  CHECK(code_info(static_cast<Code>(0xFFFFFFFFu)) == nullptr);
  CHECK(code_info(std::string_view("NO_SUCH_ERROR")) == nullptr);
  CHECK(code_info(std::string_view("")) == nullptr);
  Status s(static_cast<Code>(0x12345678u), "from a newer peer");
  CHECK(s.name() == "UNKNOWN");
  CHECK(s.http_status() == 500);
  CHECK(s.exit_code() == 1);
}

TEST_CASE("a default Status is ok") {
  Status s;
  CHECK(s.ok());
  CHECK(s.code() == Code::kOk);
  CHECK(s.raw_code() == 0);
  CHECK(s.fields().empty());
  CHECK(Status::ok_status().ok());
  REQUIRE(code_info(Code::kOk) != nullptr);
  CHECK(code_info(Code::kOk)->exit_code == 0);
}

TEST_CASE("fields are kept, looked up and added") {
  Status s(Code::kOffsetAhead, "past the end", {{"requested", "12"}, {"next", "10"}});
  CHECK(s.field("requested") == "12");
  CHECK(s.field("next") == "10");
  CHECK(s.field("absent").empty());
  s.with("partition", "3");
  CHECK(s.fields().size() == 3);
  CHECK(s.field("partition") == "3");
  s.with("partition", "4");
  CHECK(s.field("partition") == "4");

  Status moved = Status::of(Code::kUnknownGroup).with("group", "g1");
  CHECK(moved.field("group") == "g1");
  CHECK(moved.code() == Code::kUnknownGroup);
}

TEST_CASE("to_string is NAME: message (k=v, ...) in key order") {
  CHECK(Status(Code::kStreamFull, "full").to_string() == "STREAM_FULL: full");
  Status s(Code::kOffsetTrimmed, "gone", {{"requested", "1"}, {"first", "5"}});
  CHECK(s.to_string() == "OFFSET_TRIMMED: gone (first=5, requested=1)");
}

TEST_CASE("io_error carries op, path and errno as STREAM_BACKEND_FAILED") {
  Status s = Status::io_error("fdatasync", "/data/x.log", ENOSPC);
  CHECK(s.code() == Code::kStreamBackendFailed);
  CHECK(s.field("op") == "fdatasync");
  CHECK(s.field("path") == "/data/x.log");
  CHECK(s.field("errno") == std::to_string(ENOSPC));
  CHECK(s.field("error") == std::strerror(ENOSPC));
  CHECK(s.message().find("fdatasync /data/x.log") == 0);
  CHECK(s.exit_code() == 74);
}

Status fails_at(int step, int& reached) {
  for (int i = 0; i < 3; ++i) {
    reached = i;
    STREAMD_RETURN_IF_ERROR(i == step ? Status::of(Code::kUnavailable) : Status());
  }
  return Status();
}

TEST_CASE("STREAMD_RETURN_IF_ERROR returns the first error") {
  int reached = -1;
  CHECK(fails_at(1, reached).code() == Code::kUnavailable);
  CHECK(reached == 1);
  CHECK(fails_at(7, reached).ok());
  CHECK(reached == 2);
}

TEST_CASE("Result holds a value or a status") {
  Result<int> good(42);
  CHECK(good.ok());
  CHECK(*good == 42);
  Result<int> bad(Status::of(Code::kStreamNotFound));
  CHECK_FALSE(bad.ok());
  CHECK(bad.status().code() == Code::kStreamNotFound);
}

}  // namespace
}  // namespace streamd
