"""kafka-python against streamd's Kafka listener.

usage: kafka_python_scenarios.py SCENARIO KAFKA_PORT NATIVE_PORT
  basic      the release inferred from ApiVersions; producer send().get(); a consumer with
             group_id=None; a group that resumes after its commit
  admin      KafkaAdminClient create_topics, describe_configs, alter_configs, delete_topics
  groups     a commit with metadata on an empty topic; list, describe, fetch offsets of and delete
             groups; create_partitions and describe_acls refused
"""
import sys

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka import errors as Errors
from kafka.admin import (ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType, ConfigResource,
                         ConfigResourceType, NewPartitions, NewTopic, ResourcePatternFilter, ResourceType)
from kafka.structs import OffsetAndMetadata

from common import check, equal, streamctl


def basic(port, native):
    b = "127.0.0.1:%d" % port
    streamctl(native, "create", "kp", "--partitions", "2")
    p = KafkaProducer(bootstrap_servers=b, acks="all")
    # kafka-python infers a broker release from the advertised ranges, then speaks fixed versions.
    check(p.config["api_version"] >= (2, 0, 0), "inferred release %r" % (p.config["api_version"],))
    sent = []
    for i in range(6):
        md = p.send("kp", key=b"key%d" % i, value=b"value%d" % i, partition=i % 2,
                    headers=[("i", str(i).encode())]).get(timeout=10)
        sent.append((md.partition, md.offset))
    equal(sorted(sent), [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)], "send().get() metadata")
    p.close()

    # group_id=None: no group, offsets from the beginning, CRCs checked (check_crcs defaults on).
    c = KafkaConsumer(bootstrap_servers=b, group_id=None, auto_offset_reset="earliest", consumer_timeout_ms=3000,
                      check_crcs=True)
    c.assign([TopicPartition("kp", 0), TopicPartition("kp", 1)])
    got = sorted((m.partition, m.offset, m.key, m.value, m.headers) for m in c)
    equal(len(got), 6, "records read without a group")
    equal(got[0], (0, 0, b"key0", b"value0", [("i", b"0")]), "the first record")
    c.close()

    # A group reads half, commits, closes; a new member of the group resumes after the commit.
    c = KafkaConsumer("kp", bootstrap_servers=b, group_id="kpg", auto_offset_reset="earliest",
                      enable_auto_commit=False, consumer_timeout_ms=5000, max_poll_records=1)
    first = []
    for m in c:
        first.append((m.partition, m.offset))
        if len(first) == 3:
            break
    c.commit()
    c.close()
    c = KafkaConsumer("kp", bootstrap_servers=b, group_id="kpg", auto_offset_reset="earliest",
                      enable_auto_commit=False, consumer_timeout_ms=5000)
    rest = [(m.partition, m.offset) for m in c]
    c.close()
    equal(sorted(first + rest), sorted(sent), "the resumed group reads exactly the rest")


def admin(port, native):
    a = KafkaAdminClient(bootstrap_servers="127.0.0.1:%d" % port)
    r = a.create_topics([NewTopic("kpa", 3, 1, topic_configs={"retention.ms": "60000", "segment.bytes": "1048576",
                                                           "message.timestamp.type": "LogAppendTime"})])
    equal([e[1] for e in r.topic_errors], [0], "create_topics errors")
    configs = a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "kpa")])
    entries = {e[0]: e[1] for e in configs[0].resources[0][4]}
    equal(entries["retention.ms"], "60000", "retention.ms")
    equal(entries["segment.bytes"], "1048576", "segment.bytes")
    equal(entries["message.timestamp.type"], "LogAppendTime", "message.timestamp.type")
    desc = streamctl(native, "describe", "kpa")[0]
    equal(desc["policy"]["segment_bytes"], 1048576, "the policy streamctl describes")
    equal(desc["policy"]["timestamp_type"], "LogAppendTime", "the timestamp type streamctl describes")
    # alter_configs replaces the topic's configs: retention.ms is set, the others return to their defaults.
    r = a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "kpa", configs={"retention.ms": "120000"})])
    equal([(e[0], e[3]) for e in r.resources], [(0, "kpa")], "alter_configs")
    configs = a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "kpa")])
    entries = {e[0]: e[1] for e in configs[0].resources[0][4]}
    equal(entries["retention.ms"], "120000", "retention.ms after alter_configs")
    equal(entries["segment.bytes"], "67108864", "segment.bytes back to the default")
    equal(entries["message.timestamp.type"], "CreateTime", "message.timestamp.type back to the default")
    equal(streamctl(native, "describe", "kpa")[0]["policy"]["retain_for_ms"], 120000, "the policy after the change")
    r = a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "kpa", configs={"compression.type": "gzip"}),
                         ConfigResource(ConfigResourceType.TOPIC, "nope", configs={"retention.ms": "1"})])
    equal([(e[0], e[3]) for e in r.resources], [(40, "kpa"), (3, "nope")], "alter_configs refusals")
    check("compression.type" in r.resources[0][1], "the refusal names the config: %r" % (r.resources[0][1],))
    r = a.delete_topics(["kpa"])
    equal([e[1] for e in r.topic_error_codes], [0], "delete_topics errors")
    a.close()


def groups(port, native):
    """Commit metadata on an empty topic, the admin's group calls, ACLs and partitions refused."""
    a = KafkaAdminClient(bootstrap_servers="127.0.0.1:%d" % port)
    a.create_topics([NewTopic("kgroups", 2, 1)])
    # Kafka takes a commit past the end of an empty topic, with its metadata, and gives both back.
    c = KafkaConsumer(bootstrap_servers="127.0.0.1:%d" % port, group_id="meta", enable_auto_commit=False)
    tp = TopicPartition("kgroups", 0)
    c.commit({tp: OffsetAndMetadata(42, "where I stopped")})
    got = c.committed(tp, metadata=True)
    equal((got.offset, got.metadata), (42, "where I stopped"), "committed with metadata")
    c.close()
    equal([g["committed"] for g in streamctl(native, "groups", "kgroups")[0] if g["group"] == "meta"], [42],
          "streamctl shows the Kafka commit")
    listed = dict(a.list_consumer_groups())
    equal(listed.get("meta"), "consumer", "list_consumer_groups")
    described = a.describe_consumer_groups(["meta"])[0]
    equal((described.group, described.state), ("meta", "Empty"), "describe_consumer_groups")
    offsets = a.list_consumer_group_offsets("meta")
    equal((offsets[tp].offset, offsets[tp].metadata), (42, "where I stopped"), "list_consumer_group_offsets")
    equal(a.delete_consumer_groups(["meta", "never-was"]),
          [("meta", Errors.NoError), ("never-was", Errors.GroupIdNotFoundError)], "delete_consumer_groups")
    check("meta" not in dict(a.list_consumer_groups()), "the deleted group is gone")
    try:
        a.create_partitions({"kgroups": NewPartitions(4)})
        check(False, "create_partitions succeeded")
    except Errors.InvalidPartitionsError:
        pass
    try:
        a.describe_acls(ACLFilter(principal=None, host="*", operation=ACLOperation.ANY,
                                  permission_type=ACLPermissionType.ANY,
                                  resource_pattern=ResourcePatternFilter(ResourceType.TOPIC, None,
                                                                         ACLResourcePatternType.ANY)))
        check(False, "describe_acls without an access file succeeded")
    except Errors.SecurityDisabledError:
        pass
    a.close()


if __name__ == "__main__":
    scenario, port, native = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    {"basic": basic, "admin": admin, "groups": groups}[scenario](port, native)
    print("ok")
