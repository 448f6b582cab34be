// The administrative commands: create, delete, list, describe, bounds, peek, commit, committed, groups,
// seek, trim, compact and health.

#include "client/duration.h"
#include "client/streamctl/commands.h"
#include "client/streamctl/json_writer.h"
#include "client/streamctl/output.h"
#include "client/streamctl/timestamp.h"

namespace streamd::streamctl {

using client::Error;
using client::Result;
using client::Status;

Result<std::vector<int32_t>> all_partitions(Context& ctx, const std::string& name) {
  auto description = ctx.admin.describe_stream(name);
  if (!description.ok()) return description.error();
  std::vector<int32_t> partitions;
  for (const auto& p : description->partitions) partitions.push_back(p.partition);
  if (partitions.empty()) {
    for (int32_t p = 0; p < std::max(description->policy.partitions, 1); ++p) partitions.push_back(p);
  }
  return partitions;
}

Result<std::vector<int32_t>> chosen_partitions(Context& ctx, const std::string& name,
                                               std::optional<int32_t> partition) {
  if (partition) return std::vector<int32_t>{*partition};
  return all_partitions(ctx, name);
}

namespace {

void print_policy_text(std::ostream& out, const client::Policy& p) {
  auto bytes_or = [](int64_t v, const char* zero) { return v == 0 ? std::string(zero) : std::to_string(v); };
  auto duration_or = [](std::chrono::milliseconds d, const char* zero) {
    return d.count() == 0 ? std::string(zero) : client::format_duration(d);
  };
  out << "partitions:        " << p.partitions << '\n'
      << "max_record_bytes:  " << bytes_or(p.max_record_bytes, "default") << '\n'
      << "retain_for:        " << duration_or(p.retain_for, "forever") << '\n'
      << "retain_bytes:      " << bytes_or(p.retain_bytes, "unbounded") << '\n'
      << "max_bytes:         " << bytes_or(p.max_bytes, "unbounded") << '\n'
      << "block_timeout:     " << duration_or(p.block_timeout, "0") << '\n'
      << "segment_bytes:     " << bytes_or(p.segment_bytes, "default") << '\n'
      << "compact_after:     " << duration_or(p.compact_after, "never") << '\n';
}

}  // namespace

Status create_command(Context& ctx, const CreateArgs& args) {
  auto created = ctx.admin.create_stream(args.name, args.policy, args.if_not_exists);
  if (!created.ok()) return created.error();
  if (ctx.json) {
    JsonWriter w;
    w.begin_object().field("name", created->name).key("policy");
    write_policy(w, created->policy);
    w.end_object();
    ctx.out << w.str() << '\n';
  } else {
    ctx.out << (created->created ? "created stream " : "stream already exists: ") << created->name << '\n';
    print_policy_text(ctx.out, created->policy);
  }
  return Status();
}

Status delete_command(Context& ctx, const std::string& name, bool if_exists) {
  auto deleted = ctx.admin.delete_stream(name, if_exists);
  if (!deleted.ok()) return deleted.error();
  if (ctx.json) {
    ctx.out << JsonWriter().begin_object().field("name", name).end_object().str() << '\n';
  } else {
    ctx.out << (*deleted ? "deleted stream " : "no such stream: ") << name << '\n';
  }
  return Status();
}

Status list_command(Context& ctx) {
  auto streams = ctx.admin.list_streams();
  if (!streams.ok()) return streams.error();
  if (ctx.json) {
    JsonWriter w;
    w.begin_array();
    for (const auto& s : *streams)
      w.begin_object().field("name", s.name).field("partitions", s.partitions).end_object();
    w.end_array();
    ctx.out << w.str() << '\n';
    return Status();
  }
  Table table({"NAME", "PARTITIONS"}, {false, true});
  for (const auto& s : *streams) table.add({s.name, std::to_string(s.partitions)});
  table.print(ctx.out);
  return Status();
}

Status describe_command(Context& ctx, const std::string& name) {
  auto d = ctx.admin.describe_stream(name);
  if (!d.ok()) return d.error();
  if (ctx.json) {
    JsonWriter w;
    w.begin_object().field("name", d->name).key("policy");
    write_policy(w, d->policy);
    w.key("partitions").begin_array();
    for (const auto& p : d->partitions) {
      w.begin_object()
          .field("partition", p.partition)
          .field("first", p.first)
          .field("next", p.next)
          .field("bytes", p.bytes)
          .field("segments", p.segments)
          .end_object();
    }
    w.end_array().end_object();
    ctx.out << w.str() << '\n';
    return Status();
  }
  ctx.out << "stream:            " << d->name << '\n';
  if (d->created_at_us != 0) ctx.out << "created_at:        " << format_rfc3339_us(d->created_at_us) << '\n';
  print_policy_text(ctx.out, d->policy);
  ctx.out << '\n';
  Table table({"PARTITION", "FIRST", "NEXT", "BYTES", "SEGMENTS"}, {true, true, true, true, true});
  for (const auto& p : d->partitions) {
    table.add({std::to_string(p.partition), std::to_string(p.first), std::to_string(p.next),
               std::to_string(p.bytes), std::to_string(p.segments)});
  }
  table.print(ctx.out);
  return Status();
}

Status bounds_command(Context& ctx, const std::string& name, std::optional<int32_t> partition) {
  auto partitions = chosen_partitions(ctx, name, partition);
  if (!partitions.ok()) return partitions.error();
  std::vector<client::Bounds> bounds;
  for (int32_t p : *partitions) {
    auto b = ctx.admin.bounds(name, p);
    if (!b.ok()) return b.error();
    bounds.push_back(*b);
  }
  if (ctx.json) {
    JsonWriter w;
    w.begin_array();
    for (const auto& b : bounds) {
      w.begin_object()
          .field("partition", b.partition)
          .field("first", b.first)
          .field("next", b.next)
          .end_object();
    }
    w.end_array();
    ctx.out << w.str() << '\n';
    return Status();
  }
  Table table({"PARTITION", "FIRST", "NEXT"}, {true, true, true});
  for (const auto& b : bounds) {
    table.add({std::to_string(b.partition), std::to_string(b.first), std::to_string(b.next)});
  }
  table.print(ctx.out);
  return Status();
}

Status peek_command(Context& ctx, const std::string& name, int32_t partition) {
  auto entry = ctx.admin.peek(name, partition);
  if (!entry.ok()) return entry.error();
  if (ctx.json) {
    JsonWriter w;
    if (*entry) {
      write_entry(w, **entry);
    } else {
      w.null();
    }
    ctx.out << w.str() << '\n';
  } else if (*entry) {
    const client::Entry& e = **entry;
    ctx.out << "partition " << e.partition << " offset " << e.offset << " at "
            << format_rfc3339_us(e.appended_at_us) << '\n'
            << "key:     " << e.record.key << '\n'
            << "payload: " << e.record.payload << '\n';
  } else {
    ctx.out << "partition " << partition << " is empty\n";
  }
  return Status();
}

Status commit_command(Context& ctx, const std::string& name, const std::string& group, int32_t partition,
                      uint64_t offset) {
  if (Status s = ctx.admin.commit(name, group, partition, offset); !s.ok()) return s;
  if (ctx.json) {
    ctx.out << JsonWriter()
                   .begin_object()
                   .field("group", group)
                   .field("partition", partition)
                   .field("offset", offset)
                   .end_object()
                   .str()
            << '\n';
  } else {
    ctx.out << "group " << group << " partition " << partition << " committed at " << offset << '\n';
  }
  return Status();
}

Status committed_command(Context& ctx, const std::string& name, const std::string& group,
                         std::optional<int32_t> partition) {
  std::vector<std::pair<int32_t, uint64_t>> rows;
  if (partition) {
    auto offset = ctx.admin.committed(name, group, *partition);
    if (!offset.ok()) return offset.error();
    rows.emplace_back(*partition, *offset);
  } else {
    auto all = all_partitions(ctx, name);
    if (!all.ok()) return all.error();
    for (int32_t p : *all) {
      auto offset = ctx.admin.committed(name, group, p);
      if (offset.ok()) {
        rows.emplace_back(p, *offset);
      } else if (!offset.error().is(client::ErrorCode::kUnknownGroup)) {
        return offset.error();
      }
    }
    // A group that committed nowhere is unknown, as it is for one partition.
    if (rows.empty()) return Error(client::ErrorCode::kUnknownGroup, {{"group", group}, {"stream", name}});
  }
  if (ctx.json) {
    JsonWriter w;
    w.begin_array();
    for (const auto& [p, o] : rows) w.begin_object().field("partition", p).field("offset", o).end_object();
    w.end_array();
    ctx.out << w.str() << '\n';
    return Status();
  }
  Table table({"PARTITION", "OFFSET"}, {true, true});
  for (const auto& [p, o] : rows) table.add({std::to_string(p), std::to_string(o)});
  table.print(ctx.out);
  return Status();
}

Status groups_command(Context& ctx, const std::string& name) {
  auto groups = ctx.admin.list_groups(name);
  if (!groups.ok()) return groups.error();
  if (ctx.json) {
    JsonWriter w;
    w.begin_array();
    for (const auto& g : *groups) {
      w.begin_object()
          .field("group", g.group)
          .field("partition", g.partition)
          .field("committed", g.committed)
          .field("next", g.next)
          .field("lag", g.lag)
          .end_object();
    }
    w.end_array();
    ctx.out << w.str() << '\n';
    return Status();
  }
  Table table({"GROUP", "PARTITION", "COMMITTED", "NEXT", "LAG"}, {false, true, true, true, true});
  for (const auto& g : *groups) {
    table.add({g.group, std::to_string(g.partition), std::to_string(g.committed), std::to_string(g.next),
               std::to_string(g.lag)});
  }
  table.print(ctx.out);
  return Status();
}

Status seek_command(Context& ctx, const std::string& name, int32_t partition, const std::string& time) {
  std::string_view text = time;
  if (!text.empty() && text.front() == '@') text.remove_prefix(1);
  auto at = parse_time_us(text, now_us());
  if (!at.ok()) return at.error();
  auto offset = ctx.admin.offset_at(name, partition, *at);
  if (!offset.ok()) return offset.error();
  if (ctx.json) {
    ctx.out << JsonWriter()
                   .begin_object()
                   .field("partition", partition)
                   .field("offset", *offset)
                   .end_object()
                   .str()
            << '\n';
  } else {
    ctx.out << "partition " << partition << " offset " << *offset << '\n';
  }
  return Status();
}

Status trim_command(Context& ctx, const std::string& name, int32_t partition, uint64_t before) {
  auto first = ctx.admin.trim(name, partition, before);
  if (!first.ok()) return first.error();
  if (ctx.json) {
    ctx.out
        << JsonWriter().begin_object().field("partition", partition).field("first", *first).end_object().str()
        << '\n';
  } else {
    ctx.out << "partition " << partition << " now starts at " << *first << '\n';
  }
  return Status();
}

Status compact_command(Context& ctx, const std::string& name, std::optional<int32_t> partition) {
  auto partitions = chosen_partitions(ctx, name, partition);
  if (!partitions.ok()) return partitions.error();
  std::vector<client::CompactResult> results;
  for (int32_t p : *partitions) {
    auto r = ctx.admin.compact(name, p);
    if (!r.ok()) return r.error();
    results.push_back(*r);
  }
  if (ctx.json) {
    JsonWriter w;
    w.begin_array();
    for (const auto& r : results) {
      w.begin_object()
          .field("partition", r.partition)
          .field("scanned", r.scanned)
          .field("kept", r.kept)
          .field("dropped", r.dropped)
          .end_object();
    }
    w.end_array();
    ctx.out << w.str() << '\n';
    return Status();
  }
  Table table({"PARTITION", "SCANNED", "KEPT", "DROPPED"}, {true, true, true, true});
  for (const auto& r : results) {
    table.add({std::to_string(r.partition), std::to_string(r.scanned), std::to_string(r.kept),
               std::to_string(r.dropped)});
  }
  table.print(ctx.out);
  return Status();
}

Status health_command(Context& ctx) {
  auto h = ctx.admin.health();
  if (!h.ok()) return h.error();
  if (ctx.json) {
    ctx.out << JsonWriter()
                   .begin_object()
                   .field("status", h->status)
                   .field("version", h->version)
                   .field("uptime_s", h->uptime_s)
                   .field("streams", h->streams)
                   .end_object()
                   .str()
            << '\n';
  } else {
    ctx.out << "status:   " << h->status << '\n'
            << "version:  " << h->version << '\n'
            << "uptime:   " << client::format_duration(std::chrono::seconds(h->uptime_s)) << '\n'
            << "streams:  " << h->streams << '\n';
  }
  return Status();
}

}  // namespace streamd::streamctl
