// DescribeAcls 0-3, CreateAcls 0-3 and DeleteAcls 0-3 (docs/KAFKA.md §ACLs). The access file
// (docs/SECURITY.md) is the source of truth for who may do what, so DescribeAcls answers its grants
// mapped onto ACL bindings, and CreateAcls and DeleteAcls are refused, each creation and filter with
// a message saying to edit the file. Without an access file there is no authorizer: every call is
// SECURITY_DISABLED, as Kafka answers without one. Describing ACLs takes the admin right on every
// stream (a grant on "*"): it shows every principal's rights (CLUSTER_AUTHORIZATION_FAILED otherwise).
#include <string>
#include <vector>

#include "server/auth/access_table.h"
#include "server/auth/authenticator.h"
#include "server/kafka/handlers.h"
#include "server/kafka/kafka_metrics.h"

namespace streamd::kafka {
namespace {

// Kafka's enums (AclOperation, ResourceType, PatternType, AclPermissionType) as the wire spells them.
constexpr int8_t kAny = 1;
constexpr int8_t kMatch = 2;
constexpr int8_t kLiteral = 3;
constexpr int8_t kPrefixed = 4;
constexpr int8_t kTopic = 2;
constexpr int8_t kGroup = 3;
constexpr int8_t kOpAll = 2;
constexpr int8_t kOpRead = 3;
constexpr int8_t kOpWrite = 4;
constexpr int8_t kOpCreate = 5;
constexpr int8_t kOpDelete = 6;
constexpr int8_t kOpAlter = 7;
constexpr int8_t kOpDescribe = 8;
constexpr int8_t kOpDescribeConfigs = 10;
constexpr int8_t kOpAlterConfigs = 11;
constexpr int8_t kAllow = 3;

struct Binding {
  int8_t resource_type;
  std::string resource_name;
  int8_t pattern_type;
  std::string principal;  // "User:name"
  int8_t operation;
};

// A grant's rights as Kafka operations: all three are ALL; otherwise read is READ, write WRITE,
// admin what creating, deleting, trimming and re-configuring a topic take, and any right DESCRIBE.
std::vector<int8_t> operations(auth::Rights rights) {
  if (rights == auth::Rights::all()) return {kOpAll};
  std::vector<int8_t> ops;
  if (rights.has(auth::Right::kRead)) ops.push_back(kOpRead);
  if (rights.has(auth::Right::kWrite)) ops.push_back(kOpWrite);
  if (rights.has(auth::Right::kAdmin)) {
    for (int8_t op : {kOpCreate, kOpDelete, kOpAlter, kOpAlterConfigs, kOpDescribeConfigs}) ops.push_back(op);
  }
  if (!rights.empty()) ops.push_back(kOpDescribe);
  return ops;
}

std::vector<Binding> bindings(const auth::AccessTable& table) {
  std::vector<Binding> out;
  for (const auth::PrincipalEntry& p : table.entries()) {
    const std::string principal = "User:" + p.name;
    bool reads = false;
    for (const auth::Grant& g : p.grants) {
      const std::string text = g.pattern.str();
      const bool prefix = !g.pattern.covers_all() && !text.empty() && text.back() == '*';
      const std::string name = prefix ? text.substr(0, text.size() - 1) : text;
      for (int8_t op : operations(g.rights)) {
        out.push_back({kTopic, name, prefix ? kPrefixed : kLiteral, principal, op});
      }
      reads |= g.rights.has(auth::Right::kRead);
    }
    // Kafka's group APIs take read on some stream here (docs/KAFKA.md §Security): any group.
    if (reads) out.push_back({kGroup, "*", kLiteral, principal, kOpRead});
  }
  return out;
}

struct Filter {
  int8_t resource_type = kAny;
  std::optional<std::string> resource_name;
  int8_t pattern_type = kLiteral;
  std::optional<std::string> principal;
  std::optional<std::string> host;
  int8_t operation = kAny;
  int8_t permission = kAny;
};

bool pattern_matches(const Filter& f, const Binding& b) {
  if (!f.resource_name) return f.pattern_type == kAny || f.pattern_type == kMatch || f.pattern_type == b.pattern_type;
  const std::string& name = *f.resource_name;
  switch (f.pattern_type) {
    case kAny: return b.resource_name == name;
    case kMatch:  // every binding that applies to the resource `name`
      return (b.pattern_type == kLiteral && (b.resource_name == name || b.resource_name == "*")) ||
             (b.pattern_type == kPrefixed && name.compare(0, b.resource_name.size(), b.resource_name) == 0);
    default: return b.pattern_type == f.pattern_type && b.resource_name == name;
  }
}

bool matches(const Filter& f, const Binding& b) {
  return (f.resource_type == kAny || f.resource_type == b.resource_type) && pattern_matches(f, b) &&
         (!f.principal || *f.principal == b.principal) && (!f.host || *f.host == "*") &&
         (f.operation == kAny || f.operation == b.operation) && (f.permission == kAny || f.permission == kAllow);
}

Filter read_filter(Reader& r, int16_t version) {
  Filter f;
  f.resource_type = r.i8();
  if (auto n = r.nullable_str()) f.resource_name = std::string(*n);
  if (version >= 1) f.pattern_type = r.i8();
  if (auto p = r.nullable_str()) f.principal = std::string(*p);
  if (auto h = r.nullable_str()) f.host = std::string(*h);
  f.operation = r.i8();
  f.permission = r.i8();
  return f;
}

constexpr std::string_view kNoAuthorizer =
    "no access file is configured (auth.token_file): every connection may do everything";
constexpr std::string_view kFileIsTruth =
    "ACLs come from the access file (auth.token_file): edit its grants and reload it (SIGHUP)";

}  // namespace

bool handle_describe_acls(Request& request) {
  Reader& r = request.body;
  const int16_t version = request.version();
  const Filter filter = read_filter(r, version);
  r.tags();
  if (r.failed()) return false;
  const auto& table = request.services.auth.table();
  Error e = Error::kNone;
  std::string_view message;
  if (!table) {
    e = Error::kSecurityDisabled;
    message = kNoAuthorizer;
  } else if (!request.principal.holds_everywhere(auth::Right::kAdmin)) {
    e = Error::kClusterAuthorizationFailed;
    message = "describing ACLs takes the admin right on every stream";
  }
  std::vector<Binding> found;
  if (e == Error::kNone) {
    for (Binding& b : bindings(*table)) {
      if (matches(filter, b)) found.push_back(std::move(b));
    }
  }
  request.services.metrics.error(ApiKey::kDescribeAcls, e);
  std::string frame = request.responder.start();
  Writer w(frame, request.flexible());
  w.i32(0);
  w.i16(code(e));
  w.nullable_str(e == Error::kNone ? std::nullopt : std::optional<std::string_view>(message));
  // One resource per (type, name, pattern), its ACLs under it, in the file's order.
  std::vector<std::vector<const Binding*>> resources;
  for (const Binding& b : found) {
    auto same = [&](const std::vector<const Binding*>& res) {
      const Binding& a = *res.front();
      return a.resource_type == b.resource_type && a.resource_name == b.resource_name &&
             a.pattern_type == b.pattern_type;
    };
    auto it = std::find_if(resources.begin(), resources.end(), same);
    if (it == resources.end()) {
      resources.push_back({&b});
    } else {
      it->push_back(&b);
    }
  }
  w.array(static_cast<int32_t>(resources.size()));
  for (const auto& res : resources) {
    w.i8(res.front()->resource_type);
    w.str(res.front()->resource_name);
    if (version >= 1) w.i8(res.front()->pattern_type);
    w.array(static_cast<int32_t>(res.size()));
    for (const Binding* b : res) {
      w.str(b->principal);
      w.str("*");
      w.i8(b->operation);
      w.i8(kAllow);
      w.tags();
    }
    w.tags();
  }
  w.tags();
  request.responder.send(std::move(frame));
  return true;
}

bool handle_create_acls(Request& request) {
  Reader& r = request.body;
  const int16_t version = request.version();
  const int32_t n = r.array(7);
  for (int32_t i = 0; i < n && !r.failed(); ++i) {
    r.i8();
    r.str();
    if (version >= 1) r.i8();
    r.str();
    r.str();
    r.i8();
    r.i8();
    r.tags();
  }
  r.tags();
  if (r.failed()) return false;
  const bool secured = request.services.auth.table() != nullptr;
  const Error e = secured ? Error::kInvalidRequest : Error::kSecurityDisabled;
  std::string frame = request.responder.start();
  Writer w(frame, request.flexible());
  w.i32(0);
  w.array(n);
  for (int32_t i = 0; i < n; ++i) {
    request.services.metrics.error(ApiKey::kCreateAcls, e);
    w.i16(code(e));
    w.nullable_str(secured ? kFileIsTruth : kNoAuthorizer);
    w.tags();
  }
  w.tags();
  request.responder.send(std::move(frame));
  return true;
}

bool handle_delete_acls(Request& request) {
  Reader& r = request.body;
  const int16_t version = request.version();
  const int32_t n = r.array(7);
  for (int32_t i = 0; i < n && !r.failed(); ++i) {
    read_filter(r, version);
    r.tags();
  }
  r.tags();
  if (r.failed()) return false;
  const bool secured = request.services.auth.table() != nullptr;
  const Error e = secured ? Error::kInvalidRequest : Error::kSecurityDisabled;
  std::string frame = request.responder.start();
  Writer w(frame, request.flexible());
  w.i32(0);
  w.array(n);
  for (int32_t i = 0; i < n; ++i) {
    request.services.metrics.error(ApiKey::kDeleteAcls, e);
    w.i16(code(e));
    w.nullable_str(secured ? kFileIsTruth : kNoAuthorizer);
    w.array(0);  // matching ACLs: none deleted
    w.tags();
  }
  w.tags();
  request.responder.send(std::move(frame));
  return true;
}

}  // namespace streamd::kafka
