// DescribeConfigs 0-2, AlterConfigs 0-2 and IncrementalAlterConfigs 0-1 (docs/KAFKA.md §Topic configs):
// a topic's configs are its stream's policy, through the one table of topic_configs.h. Describing takes
// any right on the topic, changing it the admin right (TOPIC_AUTHORIZATION_FAILED otherwise). A change
// is checked on the loop — names, values, authorization — and made on `blocking` (it syncs the
// stream's metadata, or writes its database row) through Broker::alter_stream, which answers once it is
// durable; validate_only checks it against the policy in force and changes nothing. Only topic
// resources change: a broker's configs are its config file's.
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "server/broker/broker.h"
#include "server/kafka/handlers.h"
#include "server/kafka/kafka_metrics.h"
#include "server/kafka/offload.h"
#include "server/kafka/topic_configs.h"

namespace streamd::kafka {
namespace {

constexpr int8_t kTopicResource = 2;
constexpr int8_t kBrokerResource = 4;
constexpr int8_t kSourceDynamicTopic = 1;
constexpr int8_t kSourceDefault = 5;

// IncrementalAlterConfigs' operations (KIP-339).
enum class ConfigOp : int8_t { kSet = 0, kDelete = 1, kAppend = 2, kSubtract = 3 };

struct ConfigEntry {
  std::string name;
  ConfigOp op = ConfigOp::kSet;
  std::optional<std::string> value;
};

// One resource of an AlterConfigs or IncrementalAlterConfigs request, and its answer.
struct Resource {
  int8_t type = 0;
  std::string name;
  std::vector<ConfigEntry> configs;
  PolicyChange change;
  Error error = Error::kNone;
  std::string message;

  void refuse(Error e, std::string why) {
    if (error != Error::kNone) return;  // the first refusal is the one answered
    error = e;
    message = std::move(why);
  }
};

// Reads the resources of either API; `incremental` configs carry an operation.
std::vector<Resource> read_resources(Reader& r, bool incremental) {
  std::vector<Resource> resources;
  const int32_t n = r.array(4);
  for (int32_t i = 0; i < n && !r.failed(); ++i) {
    Resource& res = resources.emplace_back();
    res.type = r.i8();
    res.name = std::string(r.str());
    const int32_t configs = r.array(2);
    for (int32_t j = 0; j < configs && !r.failed(); ++j) {
      ConfigEntry& c = res.configs.emplace_back();
      c.name = std::string(r.str());
      if (incremental) c.op = static_cast<ConfigOp>(r.i8());
      if (auto value = r.nullable_str()) c.value = std::string(*value);
      r.tags();
    }
    r.tags();
  }
  return resources;
}

// What every resource must pass before its configs are looked at, as Kafka checks them: each named
// once, a topic (a broker's configs are not changed through Kafka), the admin right on it, and each
// config named once.
void check_resource(Resource& res, int count_of_same, const auth::Principal& principal) {
  if (count_of_same > 1) return res.refuse(Error::kInvalidRequest, "the resource is named more than once");
  if (res.type == kBrokerResource) {
    return res.refuse(Error::kInvalidRequest,
                      "broker configs come from streamd's config file, read at start (docs/CONFIG.md): they do "
                      "not change through Kafka");
  }
  if (res.type != kTopicResource) return res.refuse(Error::kInvalidRequest, "only topic configs change");
  if (!principal.allows(auth::Right::kAdmin, res.name)) {
    return res.refuse(Error::kTopicAuthorizationFailed, "changing a topic's configs takes the admin right on it");
  }
  std::vector<std::string_view> names;
  for (const ConfigEntry& c : res.configs) names.push_back(c.name);
  std::sort(names.begin(), names.end());
  if (auto dup = std::adjacent_find(names.begin(), names.end()); dup != names.end()) {
    return res.refuse(Error::kInvalidRequest, "config " + std::string(*dup) + " is named more than once");
  }
}

// The resource's configs made into its policy change: AlterConfigs sets the configs it names and
// returns the others to the broker's default (the whole set is replaced); IncrementalAlterConfigs
// applies each operation.
void build_change(Resource& res, bool incremental, const Policy& defaults) {
  if (!incremental) reset_topic_configs(defaults, res.change);
  for (const ConfigEntry& c : res.configs) {
    std::optional<ConfigRefusal> refused;
    switch (c.op) {
      case ConfigOp::kSet:
        if (!c.value) {
          return res.refuse(Error::kInvalidRequest,
                            "config " + c.name + ": a null value sets nothing (DELETE returns a config to its default)");
        }
        refused = set_topic_config(c.name, *c.value, res.change);
        break;
      case ConfigOp::kDelete:
        refused = reset_topic_config(c.name, defaults, res.change);
        break;
      case ConfigOp::kAppend:
      case ConfigOp::kSubtract: {
        // Each config is one value, not a list: there is nothing to append to or subtract from. An
        // unknown name is refused as unknown first.
        PolicyChange scratch;
        refused = reset_topic_config(c.name, defaults, scratch);
        if (!refused) refused = ConfigRefusal{Error::kInvalidConfig, "config " + c.name + " is not a list: APPEND and SUBTRACT do not apply"};
        break;
      }
      default:
        return res.refuse(Error::kInvalidRequest, "config " + c.name + ": unknown operation " +
                                                      std::to_string(static_cast<int>(c.op)));
    }
    if (refused) return res.refuse(refused->error, std::move(refused->message));
  }
}

bool handle_alter(Request& request, bool incremental) {
  Reader& r = request.body;
  auto resources = std::make_shared<std::vector<Resource>>(read_resources(r, incremental));
  const bool validate_only = r.boolean();
  r.tags();
  if (r.failed()) return false;
  std::map<std::pair<int8_t, std::string>, int> named;
  for (const Resource& res : *resources) ++named[{res.type, res.name}];
  const Policy defaults = request.services.options.default_policy.normalized();
  for (Resource& res : *resources) {
    check_resource(res, named[{res.type, res.name}], request.principal);
    if (res.error == Error::kNone) build_change(res, incremental, defaults);
  }
  Services& services = request.services;
  const ApiKey api = incremental ? ApiKey::kIncrementalAlterConfigs : ApiKey::kAlterConfigs;
  const bool flexible = request.flexible();
  offload(request, [&services, resources, validate_only, api, flexible, responder = request.responder] {
    for (Resource& res : *resources) {
      if (res.error != Error::kNone) continue;
      auto policy = services.broker.alter_stream(res.name, res.change, validate_only);
      if (!policy.ok()) res.refuse(from_status(policy.status()), policy.status().to_string());
    }
    std::string frame = responder.start();
    Writer w(frame, flexible);
    w.i32(0);  // throttle time
    w.array(static_cast<int32_t>(resources->size()));
    for (const Resource& res : *resources) {
      services.metrics.error(api, res.error);
      w.i16(code(res.error));
      w.nullable_str(res.error == Error::kNone ? std::nullopt : std::optional<std::string_view>(res.message));
      w.i8(res.type);
      w.str(res.name);
      w.tags();
    }
    w.tags();
    return frame;
  });
  return true;
}

}  // namespace

bool handle_alter_configs(Request& request) { return handle_alter(request, false); }

bool handle_incremental_alter_configs(Request& request) { return handle_alter(request, true); }

bool handle_describe_configs(Request& request) {
  Reader& r = request.body;
  const int16_t version = request.version();
  struct Described {
    int8_t type;
    std::string name;
    std::optional<std::vector<std::string>> keys;
  };
  std::vector<Described> resources;
  const int32_t n = r.count(7);
  for (int32_t i = 0; i < n && !r.failed(); ++i) {
    Described& res = resources.emplace_back();
    res.type = r.i8();
    res.name = std::string(r.string());
    if (auto keys = r.array_count(2)) {
      res.keys.emplace();
      for (int32_t j = 0; j < *keys && !r.failed(); ++j) res.keys->emplace_back(r.string());
    }
  }
  if (version >= 1) r.boolean();  // include synonyms: there are none
  if (r.failed()) return false;
  const Policy& defaults = request.services.options.default_policy;
  std::string frame = request.responder.start();
  Writer w(frame);
  w.i32(0);
  w.array_count(static_cast<int32_t>(resources.size()));
  for (const Described& res : resources) {
    Error e = Error::kNone;
    std::string message;
    std::vector<TopicConfig> configs;
    if (res.type == kTopicResource && !request.principal.allows_any(res.name)) {
      e = Error::kTopicAuthorizationFailed;
      message = "describing a topic takes a right on it";
    } else if (res.type == kTopicResource) {
      auto d = request.services.broker.describe_stream(res.name);
      if (d.ok()) {
        configs = describe_topic_configs(d->policy, defaults);
      } else {
        e = from_status(d.status());
        message = d.status().to_string();
      }
    } else if (res.type != kBrokerResource) {
      e = Error::kInvalidRequest;
      message = "only topic and broker resources are described";
    }
    if (res.keys) {
      std::erase_if(configs, [&](const TopicConfig& c) {
        return std::find(res.keys->begin(), res.keys->end(), c.name) == res.keys->end();
      });
    }
    request.services.metrics.error(ApiKey::kDescribeConfigs, e);
    w.i16(code(e));
    w.nullable_string(e == Error::kNone ? std::nullopt : std::optional<std::string_view>(message));
    w.i8(res.type);
    w.string(res.name);
    w.array_count(static_cast<int32_t>(configs.size()));
    for (const TopicConfig& c : configs) {
      w.string(c.name);
      w.nullable_string(c.value);
      w.boolean(false);  // read_only: every config here can change
      if (version == 0) {
        w.boolean(c.is_default);
      } else {
        w.i8(c.is_default ? kSourceDefault : kSourceDynamicTopic);
      }
      w.boolean(false);  // sensitive
      if (version >= 1) w.array_count(0);  // synonyms
    }
  }
  request.responder.send(std::move(frame));
  return true;
}

}  // namespace streamd::kafka
