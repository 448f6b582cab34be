// streamctl's commands (docs/SEMANTICS.md §8), one function each, over the client library. app.cc parses the
// command line into these argument structs; each command prints its result to ctx.out (JSON with
// --json, text otherwise) and returns the error that ends it, which app.cc prints and turns into
// the exit code. Not thread-safe: one command runs at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <istream>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "client/admin.h"
#include "client/connection.h"
#include "client/error.h"

namespace streamd::streamctl {

struct Context {
  client::Connection& connection;
  client::Admin admin;
  bool json = false;
  std::istream& in;
  std::ostream& out;
  std::ostream& err;
  // Set by SIGINT/SIGTERM: following commands stop cleanly.
  const std::atomic<bool>& interrupted;
};

struct CreateArgs {
  std::string name;
  client::Policy policy;
  bool if_not_exists = false;
};

struct ProduceArgs {
  std::string name;
  std::optional<std::string> key;
  std::vector<std::string> values;
  std::optional<std::string> key_separator;
  std::vector<std::string> headers;  // NAME=VALUE
  size_t batch = 1000;
  bool base64 = false;  // key, values and stdin lines are base64
};

struct ConsumeArgs {
  std::string name;
  std::vector<int32_t> partitions;
  std::string from = "earliest";
  std::optional<uint64_t> max;
  bool follow = false;
  std::optional<std::string> group;
};

client::Status create_command(Context& ctx, const CreateArgs& args);
client::Status delete_command(Context& ctx, const std::string& name, bool if_exists);
client::Status list_command(Context& ctx);
client::Status describe_command(Context& ctx, const std::string& name);
client::Status produce_command(Context& ctx, const ProduceArgs& args);
client::Status consume_command(Context& ctx, const ConsumeArgs& args);
client::Status bounds_command(Context& ctx, const std::string& name, std::optional<int32_t> partition);
client::Status peek_command(Context& ctx, const std::string& name, int32_t partition);
client::Status commit_command(Context& ctx, const std::string& name, const std::string& group,
                              int32_t partition, uint64_t offset);
client::Status committed_command(Context& ctx, const std::string& name, const std::string& group,
                                 std::optional<int32_t> partition);
client::Status groups_command(Context& ctx, const std::string& name);
client::Status seek_command(Context& ctx, const std::string& name, int32_t partition,
                            const std::string& time);
client::Status trim_command(Context& ctx, const std::string& name, int32_t partition, uint64_t before);
client::Status compact_command(Context& ctx, const std::string& name, std::optional<int32_t> partition);
client::Status health_command(Context& ctx);

// The partitions of `name`, 0..count-1, from DescribeStream.
client::Result<std::vector<int32_t>> all_partitions(Context& ctx, const std::string& name);
// The partition a command was given, or every partition of `name` when it was given none.
client::Result<std::vector<int32_t>> chosen_partitions(Context& ctx, const std::string& name,
                                                       std::optional<int32_t> partition);

}  // namespace streamd::streamctl
