#include "client/error.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>

// The table both sides expand, read here as data.
#include "proto/error_codes.h"

namespace streamd::client {
namespace {

struct BrokerRow {
  const char* name;
  uint32_t code;
  int exit_code;
  const char* message;
};

#define STREAMD_ROW(e, name, code, http, exit, msg) BrokerRow{name, code, exit, msg},
constexpr BrokerRow kBrokerRows[] = {STREAMD_ERRORS(STREAMD_ROW)};
#undef STREAMD_ROW

TEST_CASE("the client's error table equals the broker's, row for row") {
  const size_t client_rows = static_cast<size_t>(error_table_end() - error_table_begin());
  REQUIRE(client_rows == std::size(kBrokerRows));
  for (size_t i = 0; i < client_rows; ++i) {
    const ErrorInfo& mine = error_table_begin()[i];
    const BrokerRow& theirs = kBrokerRows[i];
    INFO(theirs.name);
    CHECK(mine.name == theirs.name);
    CHECK(static_cast<uint32_t>(mine.code) == theirs.code);
    CHECK(mine.exit_code == theirs.exit_code);
    CHECK(mine.default_message == theirs.message);
  }
}

TEST_CASE("docs/SEMANTICS.md §4 exit codes") {
  CHECK(Error(ErrorCode::kStreamMisconfigured).exit_code() == 78);
  CHECK(Error(ErrorCode::kOffsetTrimmed).exit_code() == 65);
  CHECK(Error(ErrorCode::kStreamFull).exit_code() == 75);
  CHECK(Error(ErrorCode::kUnknownGroup).exit_code() == 66);
  CHECK(Error(ErrorCode::kStreamBackendFailed).exit_code() == 74);
  CHECK(Error(ErrorCode::kStreamNotFound).exit_code() == 66);
  CHECK(Error(ErrorCode::kStreamExists).exit_code() == 73);
  CHECK(Error(ErrorCode::kUnauthenticated).exit_code() == 77);
  CHECK(Error(ErrorCode::kProtocolError).exit_code() == 76);
  CHECK(Error(ErrorCode::kUnavailable).exit_code() == 69);
}

TEST_CASE("an error from a newer peer keeps its number and exits EX_SOFTWARE") {
  Error e(0x00099999u, "SOMETHING_NEW", "new");
  CHECK(e.exit_code() == kUnknownErrorExitCode);
  CHECK(e.to_string() == "SOMETHING_NEW: new");
  CHECK(error_info(0x00099999u) == nullptr);
  CHECK(error_info("SOMETHING_NEW") == nullptr);
}

TEST_CASE("an ErrorCode outside the table makes an unnamed error, as a newer peer's code does") {
  const Error e(static_cast<ErrorCode>(0x00099999u), "cast");
  CHECK(e.code() == 0x00099999u);
  CHECK(e.name().empty());
  CHECK(e.exit_code() == kUnknownErrorExitCode);
  CHECK(e.to_string() == "ERROR_629145: cast");
  CHECK(Error(static_cast<ErrorCode>(0x00099999u)).message().empty());
}

TEST_CASE("lookups by code and by name agree") {
  for (const ErrorInfo* info = error_table_begin(); info != error_table_end(); ++info) {
    CHECK(error_info(static_cast<uint32_t>(info->code)) == info);
    CHECK(error_info(info->name) == info);
  }
}

TEST_CASE("to_string is NAME: message (k=v, ...) with fields in key order") {
  Error e(ErrorCode::kOffsetAhead, {{"requested", "12"}, {"next", "10"}});
  CHECK(e.name() == "OFFSET_AHEAD");
  CHECK(e.message() == "The requested offset is past the end of the stream");
  CHECK(e.to_string() ==
        "OFFSET_AHEAD: The requested offset is past the end of the stream (next=10, requested=12)");
  e.with("partition", "3");
  CHECK(e.field("partition") == "3");
  CHECK(e.field("missing").empty());
  CHECK(Error(ErrorCode::kStreamExists, "custom").to_string() == "STREAM_EXISTS: custom");
}

TEST_CASE("Result carries a value or an error") {
  Result<int> good(7);
  REQUIRE(good.ok());
  CHECK(*good == 7);
  CHECK(good.status().ok());
  Result<int> bad{Error(ErrorCode::kUnknownGroup)};
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().is(ErrorCode::kUnknownGroup));
  CHECK_FALSE(bad.status().ok());
}

}  // namespace
}  // namespace streamd::client
