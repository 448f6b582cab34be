#include "server/storage/policy.h"

#include <catch2/catch.hpp>
#include <string>

namespace streamd {
namespace {

using std::chrono::milliseconds;

void check_refused(const Policy& p, const char* field, const char* value) {
  Status s = p.validate();
  INFO(s.to_string());
  REQUIRE_FALSE(s.ok());
  CHECK(s.code() == Code::kStreamMisconfigured);
  CHECK(s.field("field") == field);
  CHECK(s.field("value") == value);
}

TEST_CASE("the zero policy is valid and normalizes to the defaults") {
  Policy zero;
  CHECK(zero.validate().ok());
  Policy n = zero.normalized();
  CHECK(n.partitions == 1);
  CHECK(n.max_record_bytes == 1 << 20);
  CHECK(n.retain_for == milliseconds(0));
  CHECK(n.retain_bytes == 0);
  CHECK(n.max_bytes == 0);
  CHECK(n.block_timeout == milliseconds(0));
  CHECK(n.segment_bytes == 64ll << 20);
  CHECK(n.compact_after == milliseconds(0));
  CHECK(n.timestamp_type == TimestampType::kCreateTime);
  CHECK(n.validate().ok());
  CHECK(n.normalized() == n);
}

TEST_CASE("normalized keeps every non-zero value") {
  Policy p;
  p.partitions = 6;
  p.max_record_bytes = 1000;
  p.retain_for = milliseconds(3600000);
  p.retain_bytes = 5 << 20;
  p.max_bytes = 10 << 20;
  p.block_timeout = milliseconds(250);
  p.segment_bytes = 1 << 20;
  p.compact_after = milliseconds(60000);
  p.timestamp_type = TimestampType::kLogAppendTime;
  CHECK(p.validate().ok());
  CHECK(p.normalized() == p);
}

TEST_CASE("each negative field is refused by its name") {
  {
    Policy p;
    p.partitions = -1;
    check_refused(p, "partitions", "-1");
  }
  {
    Policy p;
    p.max_record_bytes = -2;
    check_refused(p, "max_record_bytes", "-2");
  }
  {
    Policy p;
    p.retain_for = milliseconds(-3);
    check_refused(p, "retain_for", "-3ms");
  }
  {
    Policy p;
    p.retain_bytes = -4;
    check_refused(p, "retain_bytes", "-4");
  }
  {
    Policy p;
    p.max_bytes = -5;
    check_refused(p, "max_bytes", "-5");
  }
  {
    Policy p;
    p.block_timeout = milliseconds(-6);
    check_refused(p, "block_timeout", "-6ms");
  }
  {
    Policy p;
    p.segment_bytes = -7;
    check_refused(p, "segment_bytes", "-7");
  }
  {
    Policy p;
    p.compact_after = milliseconds(-8);
    check_refused(p, "compact_after", "-8ms");
  }
}

TEST_CASE("max_bytes below the normalized max_record_bytes is refused on max_bytes") {
  Policy p;
  p.max_bytes = (1 << 20) - 1;  // below the 1 MiB default a zero max_record_bytes stands for
  check_refused(p, "max_bytes", "1048575");
  CHECK(p.validate().field("max_record_bytes") == "1048576");

  p.max_record_bytes = 100;
  p.max_bytes = 99;
  check_refused(p, "max_bytes", "99");
  CHECK(p.validate().field("max_record_bytes") == "100");
}

TEST_CASE("max_bytes equal to the normalized max_record_bytes is accepted") {
  Policy p;
  p.max_bytes = 1 << 20;
  CHECK(p.validate().ok());
  p.max_record_bytes = 100;
  p.max_bytes = 100;
  CHECK(p.validate().ok());
  p.max_bytes = 101;
  CHECK(p.validate().ok());
}

TEST_CASE("a positive block_timeout with no max_bytes is refused on block_timeout") {
  Policy p;
  p.block_timeout = milliseconds(1);
  check_refused(p, "block_timeout", "1ms");
  CHECK(p.validate().field("max_bytes") == "0");
  p.max_bytes = 1 << 20;
  CHECK(p.validate().ok());
}

TEST_CASE("the first faulty field in declaration order is the one reported") {
  Policy p;
  p.partitions = -1;
  p.max_record_bytes = -1;
  p.compact_after = milliseconds(-1);
  check_refused(p, "partitions", "-1");
  p.partitions = 0;
  check_refused(p, "max_record_bytes", "-1");
  p.max_record_bytes = 0;
  p.max_bytes = 10;  // below one record
  p.block_timeout = milliseconds(-1);
  check_refused(p, "max_bytes", "10");
  p.max_bytes = 0;
  check_refused(p, "block_timeout", "-1ms");
  p.block_timeout = milliseconds(0);
  p.segment_bytes = -1;
  check_refused(p, "segment_bytes", "-1");
  p.segment_bytes = 0;
  check_refused(p, "compact_after", "-1ms");
}

TEST_CASE("a timestamp type other than CreateTime or LogAppendTime is refused by its name") {
  Policy p;
  p.timestamp_type = static_cast<TimestampType>(3);
  check_refused(p, "timestamp_type", "3");
  CHECK(parse_timestamp_type("CreateTime") == TimestampType::kCreateTime);
  CHECK(parse_timestamp_type("LogAppendTime") == TimestampType::kLogAppendTime);
  CHECK_FALSE(parse_timestamp_type("createtime"));
  CHECK(std::string(timestamp_type_name(TimestampType::kDefault)) == "CreateTime");
}

}  // namespace
}  // namespace streamd
