// /api/v1/streams/{stream}/groups: every group's committed offset, next offset and lag per partition,
// in records and in seconds, with its lag trend from the history; commit; reset with a dry run
// (docs/HTTP.md §Groups).
#include <atomic>
#include <chrono>
#include <map>

#include "server/http_api/api_context.h"
#include "server/http_api/history.h"
#include "server/http_api/record_json.h"

namespace streamd::http_api {
namespace {

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// How long ago the oldest record the group has not yet read was appended: its lag in time.
std::optional<double> lag_seconds(const Broker& broker, const std::string& stream, const GroupOffset& g,
                                  Offset first) {
  if (g.lag == 0) return 0.0;
  const Offset at = std::max(g.committed, first);
  auto read = broker.read(stream, {ReadCursor{g.partition, at}}, 1, 1);
  if (!read.ok() || !read->front().status.ok() || read->front().result.entries.empty()) return std::nullopt;
  const int64_t appended = read->front().result.entries.front().appended_at.micros;
  return std::max<double>(0, static_cast<double>(now_us() - appended) / 1e6);
}

// The group's new offset on partition `p` for `to`; nullopt for a partition the plan leaves alone.
Result<Offset> target(const Broker& broker, const std::string& stream, const PartitionDescription& p,
                      const std::string& to, const JsonValue& body) {
  if (to == "earliest") return p.bounds.first;
  if (to == "latest") return p.bounds.next;
  if (to == "offset") {
    auto n = body.u64_of("offset");
    if (!n) return bad_argument("offset", "to=offset needs {\"offset\": N}");
    return Offset(*n);
  }
  if (to == "time") {
    const JsonValue* t = body.get("time");
    if (t == nullptr || !t->is_string()) return bad_argument("time", "to=time needs {\"time\": RFC 3339}");
    auto micros = parse_time("time", t->text());
    if (!micros.ok()) return micros.status();
    return broker.offset_at(stream, p.partition, Timestamp(*micros));
  }
  return bad_argument("to", "to must be earliest, latest, offset or time");
}

}  // namespace

void list_groups(ApiContext& ctx, const Call& call) {
  const std::string& stream = call->params.at(0);
  if (!require(call, auth::Right::kRead, stream, "list_groups")) return;
  ctx.workers.post([&ctx, call, stream] {
    auto d = ctx.broker.describe_stream(stream);
    if (!d.ok()) return call->error(d.status());
    auto groups = ctx.broker.list_groups(stream);
    if (!groups.ok()) return call->error(groups.status());
    std::map<std::string, std::vector<const GroupOffset*>> by_group;
    for (const GroupOffset& g : *groups) by_group[g.group].push_back(&g);
    JsonWriter w;
    w.begin_object().field("stream", stream).key("groups").begin_array();
    for (const auto& [name, offsets] : by_group) {
      uint64_t total = 0;
      double worst_seconds = 0;
      w.begin_object().field("group", name).key("partitions").begin_array();
      for (const GroupOffset* g : offsets) {
        total += g->lag;
        const size_t index = static_cast<size_t>(g->partition.value);
        const Offset first = index < d->partitions.size() ? d->partitions[index].bounds.first : Offset();
        const auto seconds = lag_seconds(ctx.broker, stream, *g, first);
        if (seconds) worst_seconds = std::max(worst_seconds, *seconds);
        w.begin_object()
            .field("partition", g->partition.value)
            .field("committed", g->committed.value)
            .field("next", g->next.value)
            .field("lag", g->lag);
        w.key("lag_seconds");
        if (seconds) {
          w.real(*seconds);
        } else {
          w.null();
        }
        w.field("trimmed", g->committed < first).end_object();
      }
      w.end_array().field("lag", total).key("lag_seconds").real(worst_seconds);
      w.key("trend").begin_array();
      for (const LagSample& s : ctx.history.group_lag(stream, name)) {
        w.begin_array().number(s.time_ms).unsigned_number(s.lag).end_array();
      }
      w.end_array().end_object();
    }
    w.end_array().end_object();
    call->json(w.take());
  });
}

void commit_group(ApiContext& ctx, const Call& call) {
  const std::string& stream = call->params.at(0);
  const std::string& group = call->params.at(1);
  if (!require(call, auth::Right::kRead, stream, "commit")) return;
  auto body = json_body(call);
  if (!body) return;
  auto partition = body->u64_of("partition");
  auto next = body->u64_of("next");
  if (!partition || *partition > static_cast<uint64_t>(INT32_MAX) || !next) {
    return call->error(bad_argument("next", "the body needs {\"partition\": P, \"next\": OFFSET}"));
  }
  ctx.broker.commit(stream, group, PartitionId(static_cast<int32_t>(*partition)), Offset(*next),
                    [call, partition = *partition, next = *next](Status s) {
                      if (!s.ok()) return call->error(s);
                      JsonWriter w;
                      w.begin_object().field("partition", partition).field("next", next).end_object();
                      call->json(w.take());
                    });
}

void reset_group(ApiContext& ctx, const Call& call) {
  const std::string& stream = call->params.at(0);
  const std::string& group = call->params.at(1);
  if (!require(call, auth::Right::kRead, stream, "commit")) return;
  auto parsed = json_body(call);
  if (!parsed) return;
  auto body = std::make_shared<JsonValue>(std::move(*parsed));
  ctx.workers.post([&ctx, call, stream, group, body] {
    const JsonValue* to = body->get("to");
    if (to == nullptr || !to->is_string()) {
      return call->error(bad_argument("to", "the body needs {\"to\": earliest|latest|offset|time}"));
    }
    const JsonValue* dry = body->get("dry_run");
    const bool dry_run = dry == nullptr || dry->type() != JsonValue::Type::kBool || dry->boolean();
    if (!dry_run) {
      // The console types the group's name to confirm; a script must say it too.
      const JsonValue* confirm = body->get("confirm");
      if (confirm == nullptr || !confirm->is_string() || confirm->text() != group) {
        return call->error(bad_argument("confirm", "a reset that is not a dry run needs {\"confirm\": GROUP}"));
      }
    }
    auto d = ctx.broker.describe_stream(stream);
    if (!d.ok()) return call->error(d.status());
    std::vector<int32_t> chosen;
    if (const JsonValue* ps = body->get("partitions"); ps != nullptr && !ps->is_null()) {
      if (!ps->is_array()) return call->error(bad_argument("partitions", "partitions must be an array"));
      for (const JsonValue& p : ps->items()) {
        auto n = p.as_u64();
        if (!n || *n >= d->partitions.size()) {
          return call->error(Status::of(Code::kUnknownPartition, {{"partition", p.text()}}));
        }
        chosen.push_back(static_cast<int32_t>(*n));
      }
    } else {
      for (const PartitionDescription& p : d->partitions) chosen.push_back(p.partition.value);
    }
    struct Move {
      PartitionId partition;
      std::optional<Offset> from;
      Offset to;
    };
    auto plan = std::make_shared<std::vector<Move>>();
    for (int32_t p : chosen) {
      const PartitionDescription& desc = d->partitions[static_cast<size_t>(p)];
      auto t = target(ctx.broker, stream, desc, to->text(), *body);
      if (!t.ok()) return call->error(t.status());
      // The same refusal a commit would meet, before anything is committed.
      if (*t > desc.bounds.next) {
        return call->error(Status::of(Code::kOffsetAhead, {{"requested", t->str()}, {"next", desc.bounds.next.str()},
                                                          {"partition", std::to_string(p)}}));
      }
      auto current = ctx.broker.committed(stream, group, PartitionId(p));
      plan->push_back(Move{PartitionId(p), current.ok() ? std::optional<Offset>(*current) : std::nullopt, *t});
    }
    auto answer = [call, plan, dry_run, group] {
      JsonWriter w;
      w.begin_object().field("group", group).field("dry_run", dry_run).key("plan").begin_array();
      for (const Move& m : *plan) {
        w.begin_object().field("partition", m.partition.value).key("from");
        if (m.from) {
          w.unsigned_number(m.from->value);
        } else {
          w.null();
        }
        w.field("to", m.to.value).end_object();
      }
      w.end_array().end_object();
      call->json(w.take());
    };
    if (dry_run || plan->empty()) return answer();
    // Commits apply in order (docs/SEMANTICS.md §7); the answer waits for every one.
    auto left = std::make_shared<std::atomic<size_t>>(plan->size());
    auto failed = std::make_shared<std::atomic<bool>>(false);
    for (const Move& m : *plan) {
      ctx.broker.commit(stream, group, m.partition, m.to, [call, left, failed, answer](Status s) {
        if (!s.ok() && !failed->exchange(true)) call->error(s);
        if (left->fetch_sub(1) == 1 && !failed->load()) answer();
      });
    }
  });
}

}  // namespace streamd::http_api
