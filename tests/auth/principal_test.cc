// Tests of server/auth/principal.cc: what grants allow, for every right and pattern, and the
// principals with no grants.
#include "server/auth/principal.h"

#include <catch2/catch.hpp>

namespace streamd::auth {
namespace {

std::shared_ptr<const AccessTable> access_table(const std::string& text) {
  auto t = AccessTable::parse(text);
  REQUIRE(t.ok());
  return std::make_shared<const AccessTable>(std::move(*t));
}

TEST_CASE("a principal may do what its grants say on the streams they cover, and nothing else", "[principal]") {
  auto table = access_table("read t-r\nwrite t-w\n"
                        "grant CN=app read orders.* audit\ngrant CN=app write orders.eu\ngrant CN=app admin scratch\n");
  const Principal app = Principal::of(table, "CN=app", table->find("CN=app"));
  CHECK(app.restricted());
  CHECK(app.allows(Right::kRead, "orders.us"));
  CHECK(app.allows(Right::kRead, "audit"));
  CHECK_FALSE(app.allows(Right::kRead, "audits"));
  CHECK_FALSE(app.allows(Right::kWrite, "orders.us"));
  CHECK(app.allows(Right::kWrite, "orders.eu"));
  CHECK(app.allows(Right::kAdmin, "scratch"));
  CHECK_FALSE(app.allows(Right::kRead, "scratch"));
  CHECK(app.allows_any("scratch"));
  CHECK_FALSE(app.allows_any("other"));
  CHECK(app.holds_anywhere(Right::kRead));
  CHECK_FALSE(app.holds_everywhere(Right::kRead));
  CHECK(app.name() == "CN=app");

  const Principal reader = Principal::of(table, "line-1", table->find("line-1"));
  CHECK(reader.holds_everywhere(Right::kRead));
  CHECK_FALSE(reader.holds_anywhere(Right::kWrite));
}

TEST_CASE("anonymous and ungranted principals may do nothing, unrestricted ones everything", "[principal]") {
  auto table = access_table("read t\n");
  const Principal anonymous = Principal::anonymous(table);
  CHECK(anonymous.anonymous());
  CHECK(anonymous.name() == "anonymous");
  CHECK_FALSE(anonymous.allows(Right::kRead, "x"));
  CHECK_FALSE(anonymous.holds_anywhere(Right::kRead));
  const Principal stranger = Principal::of(table, "CN=stranger", nullptr);
  CHECK_FALSE(stranger.anonymous());
  CHECK_FALSE(stranger.allows_any("x"));
  const Principal everyone = Principal::unrestricted();
  CHECK_FALSE(everyone.restricted());
  CHECK(everyone.allows(Right::kAdmin, "x"));
  CHECK(everyone.holds_everywhere(Right::kWrite));
}

}  // namespace
}  // namespace streamd::auth
