"""confluent-kafka-python (librdkafka) against streamd's Kafka listener.

usage: confluent_scenarios.py SCENARIO KAFKA_PORT NATIVE_PORT [FILE]
  produce   acks=all producer with delivery reports; writes every reported (partition, offset, value)
            to FILE (the test then kills the broker with SIGKILL and restarts it)
  verify    reads every reported record of FILE back by (partition, offset)
  crcs      large batches read back by a consumer that checks every batch's CRC (check.crcs)
  offsets   assign() + commit() + committed(), get_watermark_offsets, offsets_for_times
  group     a two-member group rebalancing on join and on close
  admin     AdminClient create and delete topics
  static    two static members (group.instance.id); one restarts and gets its partitions back
            without the other seeing a rebalance
  groups    AdminClient list_groups (ListGroups and DescribeGroups) with states and members, and
            create_partitions refused
  configs   AdminClient alter_configs on a live topic (what it names set, the rest back to the
            default), validate_only, refusals naming the config; describe_configs and streamctl see it
"""
import json
import sys
import time

from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic

from common import check, equal, streamctl


def conf(port, **extra):
    c = {"bootstrap.servers": "127.0.0.1:%d" % port}
    c.update(extra)
    return c


def produce(port, native, path):
    streamctl(native, "create", "dur", "--partitions", "3")
    p = Producer(conf(port, **{"acks": "all", "linger.ms": 5}))
    reports = []

    def on_delivery(err, msg):
        check(err is None, "delivery failed: %s" % err)
        reports.append((msg.partition(), msg.offset(), msg.value().decode()))

    for i in range(300):
        p.produce("dur", key=("k%d" % i).encode(), value=("v%d" % i).encode(), on_delivery=on_delivery)
        if i % 50 == 0:
            p.poll(0)
    left = p.flush(20)
    equal(left, 0, "messages not delivered")
    equal(len(reports), 300, "delivery reports")
    check(len(set((r[0], r[1]) for r in reports)) == 300, "distinct (partition, offset) per report")
    with open(path, "w") as f:
        json.dump(reports, f)


def verify(port, native, path):
    with open(path) as f:
        reports = json.load(f)
    c = Consumer(conf(port, **{"group.id": "verify", "enable.auto.commit": False}))
    by_partition = {}
    for partition, offset, value in reports:
        by_partition.setdefault(partition, {})[offset] = value
    for partition, want in by_partition.items():
        c.assign([TopicPartition("dur", partition, min(want))])
        got = {}
        deadline = time.time() + 20
        while len(got) < len(want) and time.time() < deadline:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            got[m.offset()] = m.value().decode()
        for offset, value in want.items():
            equal(got.get(offset), value, "partition %d offset %d after kill -9" % (partition, offset))
    c.close()


def crcs(port, native):
    # Batches long enough that the broker sends their records from its read buffer behind a header of
    # their own, each CRC carried over from the stored one (docs/KAFKA.md §"Record batches"); librdkafka checks
    # every batch's CRC with check.crcs and reports a mismatch as an error.
    streamctl(native, "create", "crcs", "--partitions", "1")
    p = Producer(conf(port, **{"acks": "all", "linger.ms": 200, "batch.size": 1 << 20}))
    values = [b"%05d" % i + b"x" * 95 for i in range(2000)]
    for v in values:
        p.produce("crcs", value=v, partition=0)
    equal(p.flush(20), 0, "messages not delivered")
    c = Consumer(conf(port, **{"group.id": "crcs", "enable.auto.commit": False, "check.crcs": True,
                               "enable.partition.eof": True}))
    c.assign([TopicPartition("crcs", 0, 0)])
    got = []
    deadline = time.time() + 20
    while len(got) < len(values) and time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            check(m.error().code() == KafkaError._PARTITION_EOF, "consumer error: %s" % m.error())
            continue
        got.append(m.value())
    c.close()
    equal(got, values, "every record of the large batches, in order")


def offsets(port, native):
    streamctl(native, "create", "off", "--partitions", "2")
    p = Producer(conf(port))
    for i in range(10):
        p.produce("off", value=b"a%d" % i, partition=0)
    p.flush(10)
    time.sleep(0.05)
    cut_ms = int(time.time() * 1000)
    time.sleep(0.05)
    for i in range(5):
        p.produce("off", value=b"b%d" % i, partition=0)
    p.flush(10)

    c = Consumer(conf(port, **{"group.id": "assigned", "enable.auto.commit": False}))
    # A group never committed: committed() answers no offset (-1001), no error.
    never = c.committed([TopicPartition("off", 0)], timeout=10)
    equal(never[0].offset, -1001, "committed offset of a fresh group")
    c.assign([TopicPartition("off", 0, 0)])
    seen = []
    deadline = time.time() + 10
    while len(seen) < 15 and time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            seen.append(m.offset())
    equal(seen, list(range(15)), "offsets read after assign()")
    # assign() + commit(): generation -1, no member, on an empty group.
    c.commit(offsets=[TopicPartition("off", 0, 7)], asynchronous=False)
    equal(c.committed([TopicPartition("off", 0)], timeout=10)[0].offset, 7, "committed() after commit()")
    equal(c.get_watermark_offsets(TopicPartition("off", 0), timeout=10), (0, 15), "watermarks of partition 0")
    equal(c.get_watermark_offsets(TopicPartition("off", 1), timeout=10), (0, 0), "watermarks of partition 1")
    at = c.offsets_for_times([TopicPartition("off", 0, cut_ms)], timeout=10)
    equal(at[0].offset, 10, "offsets_for_times between the two batches")
    first = c.offsets_for_times([TopicPartition("off", 0, 0)], timeout=10)
    equal(first[0].offset, 0, "offsets_for_times before everything")
    c.close()
    # The commit is streamd's group offset: streamctl shows it with its lag.
    groups = [g for g in streamctl(native, "groups", "off")[0] if g["group"] == "assigned"]
    equal([(g["partition"], g["committed"], g["lag"]) for g in groups], [(0, 7, 8)], "streamctl groups")


def group(port, native):
    streamctl(native, "create", "grp", "--partitions", "4")
    settings = {"group.id": "pair", "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 300, "enable.auto.commit": False}
    events = {"a": [], "b": []}

    def tracker(name):
        def on_assign(consumer, partitions):
            events[name].append(sorted(p.partition for p in partitions))
        return on_assign

    a = Consumer(conf(port, **settings))
    a.subscribe(["grp"], on_assign=tracker("a"))
    deadline = time.time() + 15
    while not events["a"] and time.time() < deadline:
        a.poll(0.2)
    equal(events["a"], [[0, 1, 2, 3]], "the first member's assignment")

    b = Consumer(conf(port, **settings))
    b.subscribe(["grp"], on_assign=tracker("b"))
    deadline = time.time() + 20
    while (not events["b"] or len(events["a"]) < 2) and time.time() < deadline:
        a.poll(0.1)
        b.poll(0.1)
    check(events["b"], "the second member got an assignment")
    split = sorted(events["a"][-1] + events["b"][-1])
    equal(split, [0, 1, 2, 3], "partitions split between the two after the join: %r" % events)
    check(events["a"][-1] and events["b"][-1], "each member holds partitions: %r" % events)

    # b closes (LeaveGroup): a rebalances and takes every partition back.
    b.close()
    before = len(events["a"])
    deadline = time.time() + 20
    while (len(events["a"]) == before or events["a"][-1] != [0, 1, 2, 3]) and time.time() < deadline:
        a.poll(0.1)
    equal(events["a"][-1], [0, 1, 2, 3], "the survivor's assignment after the other closed")
    a.close()


def admin(port, native):
    a = AdminClient(conf(port))
    created = a.create_topics([NewTopic("adm1", num_partitions=3, replication_factor=1),
                               NewTopic("adm2", num_partitions=-1, replication_factor=-1,
                                        config={"retention.ms": "3600000"})])
    for name, future in created.items():
        equal(future.result(), None, "create " + name)
    again = a.create_topics([NewTopic("adm1", num_partitions=1, replication_factor=1)])["adm1"]
    try:
        again.result()
        check(False, "creating adm1 twice succeeded")
    except Exception as e:  # KafkaException(TOPIC_ALREADY_EXISTS)
        equal(e.args[0].code(), KafkaError.TOPIC_ALREADY_EXISTS, "second create")
    bad = a.create_topics([NewTopic("adm3", num_partitions=1, replication_factor=1,
                                    config={"cleanup.policy": "compact"})])["adm3"]
    try:
        bad.result()
        check(False, "an unsupported config was accepted")
    except Exception as e:
        equal(e.args[0].code(), KafkaError.INVALID_CONFIG, "unsupported config")
    desc = {d["name"]: d for d in streamctl(native, "list")[0]}
    equal(desc["adm1"]["partitions"], 3, "adm1 partitions via streamctl")
    equal(desc["adm2"]["partitions"], 1, "adm2 takes the default partitions")
    check("adm3" not in desc, "a refused topic was not created")
    for name, future in a.delete_topics(["adm1", "adm2"], operation_timeout=10).items():
        equal(future.result(), None, "delete " + name)
    names = [d["name"] for d in streamctl(native, "list")[0]]
    check("adm1" not in names and "adm2" not in names, "deleted topics are gone: %r" % names)


def static(port, native):
    streamctl(native, "create", "stat", "--partitions", "4")
    settings = {"group.id": "statics", "auto.offset.reset": "earliest", "session.timeout.ms": 10000,
                "heartbeat.interval.ms": 300, "enable.auto.commit": False}
    events = {"a": [], "b": []}
    revoked = {"a": 0, "b": 0}

    def member(name, instance):
        def on_assign(consumer, partitions):
            events[name].append(sorted(p.partition for p in partitions))

        def on_revoke(consumer, partitions):
            revoked[name] += 1
        c = Consumer(conf(port, **settings, **{"group.instance.id": instance}))
        c.subscribe(["stat"], on_assign=on_assign, on_revoke=on_revoke)
        return c

    a = member("a", "instance-a")
    deadline = time.time() + 15
    while not events["a"] and time.time() < deadline:
        a.poll(0.2)
    b = member("b", "instance-b")
    deadline = time.time() + 20
    while (not events["b"] or len(events["a"]) < 2) and time.time() < deadline:
        a.poll(0.1)
        b.poll(0.1)
    check(events["b"] and len(events["a"]) >= 2, "both static members assigned: %r" % events)
    a_share, b_share = events["a"][-1], events["b"][-1]
    equal(sorted(a_share + b_share), [0, 1, 2, 3], "the split")
    a_assigns, a_revokes = len(events["a"]), revoked["a"]

    # b restarts: a static member's close sends no LeaveGroup, and its instance joins again at once.
    b.close()
    events["b"] = []
    b = member("b", "instance-b")
    deadline = time.time() + 15
    while not events["b"] and time.time() < deadline:
        a.poll(0.1)
        b.poll(0.1)
    equal(events["b"], [b_share], "the restarted static member's partitions")
    # Keep a polling for longer than a heartbeat would take to hear of a rebalance.
    deadline = time.time() + 3
    while time.time() < deadline:
        a.poll(0.1)
        b.poll(0.1)
    equal((len(events["a"]), revoked["a"]), (a_assigns, a_revokes), "the other member saw no rebalance")
    a.close()
    b.close()


def groups(port, native):
    streamctl(native, "create", "lg", "--partitions", "2")
    c = Consumer(conf(port, **{"group.id": "listed", "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
                               "enable.auto.commit": False, "client.id": "lister"}))
    assigned = []
    c.subscribe(["lg"], on_assign=lambda consumer, parts: assigned.append(parts))
    deadline = time.time() + 15
    while not assigned and time.time() < deadline:
        c.poll(0.2)
    check(assigned, "the consumer joined")
    a = AdminClient(conf(port))
    found = {g.id: g for g in a.list_groups(timeout=10)}
    check("listed" in found, "list_groups shows the group: %r" % list(found))
    g = found["listed"]
    equal(g.state, "Stable", "the group's state")
    equal(g.protocol_type, "consumer", "protocol type")
    equal([m.client_id for m in g.members], ["lister"], "its member")
    c.close()
    refused = a.create_partitions([NewPartitions("lg", 4)])["lg"]
    try:
        refused.result()
        check(False, "adding partitions succeeded")
    except Exception as e:  # KafkaException(INVALID_PARTITIONS)
        equal(e.args[0].code(), KafkaError.INVALID_PARTITIONS, "create_partitions")
        check("fixed" in e.args[0].str(), "the refusal says why: %s" % e.args[0].str())
    equal(streamctl(native, "describe", "lg")[0]["policy"]["partitions"], 2, "partitions unchanged")


def configs(port, native):
    a = AdminClient(conf(port))
    created = a.create_topics([NewTopic("cfg", num_partitions=2, replication_factor=1,
                                        config={"retention.ms": "3600000", "segment.bytes": "1048576"})])
    equal(created["cfg"].result(), None, "create cfg")
    p = Producer(conf(port))
    p.produce("cfg", key=b"k", value=b"before", partition=0, timestamp=1500000000000)
    equal(p.flush(10), 0, "produced before the change")

    def described():
        res = ConfigResource(ConfigResource.Type.TOPIC, "cfg")
        return {name: e for name, e in a.describe_configs([res])[res].result().items()}

    # AlterConfigs replaces the topic's set: what it names is set, the rest returns to the default.
    res = ConfigResource(ConfigResource.Type.TOPIC, "cfg",
                         set_config={"retention.bytes": "5000000", "max.message.bytes": "4096",
                                     "message.timestamp.type": "LogAppendTime"})
    for _, future in a.alter_configs([res]).items():
        equal(future.result(), None, "alter_configs")
    got = described()
    equal(got["retention.bytes"].value, "5000000", "retention.bytes after alter_configs")
    equal(got["max.message.bytes"].value, "4096", "max.message.bytes after alter_configs")
    equal(got["retention.ms"].value, "-1", "retention.ms back to the default")
    check(got["retention.ms"].is_default, "retention.ms is the default again")
    equal(got["segment.bytes"].value, "67108864", "segment.bytes back to the default")
    policy = streamctl(native, "describe", "cfg")[0]["policy"]
    equal((policy["retain_bytes"], policy["max_record_bytes"], policy["retain_for_ms"]), (5000000, 4096, 0),
          "the policy streamctl describes")
    # The record written before the change is now shown with its append time, not the producer's.
    c = Consumer(conf(port, **{"group.id": "cfg-read", "enable.auto.commit": False}))
    c.assign([TopicPartition("cfg", 0, 0)])
    m = c.poll(10)
    c.close()
    check(m is not None and m.error() is None, "the record written before the change reads back")
    kind, ts = m.timestamp()
    equal(kind, TIMESTAMP_LOG_APPEND_TIME, "the timestamp type after the change")
    check(ts > 1500000000000, "the append time, not the producer's: %d" % ts)
    # The new record limit decides the next produce: 5000 bytes no longer fit.
    errors = []
    p.produce("cfg", key=b"k", value=b"x" * 5000, on_delivery=lambda err, msg: errors.append(err))
    p.flush(10)
    equal([e.code() if e else None for e in errors], [KafkaError.MSG_SIZE_TOO_LARGE], "a record past the new limit")

    # validate_only checks and changes nothing.
    res = ConfigResource(ConfigResource.Type.TOPIC, "cfg", set_config={"retention.bytes": "7000000"})
    for _, future in a.alter_configs([res], validate_only=True).items():
        equal(future.result(), None, "alter_configs validate_only")
    equal(described()["retention.bytes"].value, "5000000", "validate_only changed nothing")

    # Refusals name the config; nothing changes.
    for config, code in (({"cleanup.policy": "compact"}, KafkaError.INVALID_CONFIG),
                         ({"retention.ms": "soon"}, KafkaError.INVALID_CONFIG),
                         ({"message.timestamp.type": "createtime"}, KafkaError.INVALID_CONFIG)):
        res = ConfigResource(ConfigResource.Type.TOPIC, "cfg", set_config=config)
        try:
            a.alter_configs([res])[res].result()
            check(False, "accepted %r" % config)
        except Exception as e:  # KafkaException
            equal(e.args[0].code(), code, "refusal of %r" % config)
            name = list(config)[0]
            check(name in e.args[0].str(), "the refusal names %s: %s" % (name, e.args[0].str()))
    broker = ConfigResource(ConfigResource.Type.BROKER, "0", set_config={"log.retention.ms": "1000"})
    try:
        a.alter_configs([broker])[broker].result()
        check(False, "a broker config changed")
    except Exception as e:
        equal(e.args[0].code(), KafkaError.INVALID_REQUEST, "a broker resource")
    equal(described()["retention.bytes"].value, "5000000", "the refusals changed nothing")


if __name__ == "__main__":
    scenario, port, native = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    args = sys.argv[4:]
    {"produce": produce, "verify": verify, "offsets": offsets, "group": group, "admin": admin, "static": static,
     "groups": groups, "configs": configs, "crcs": crcs}[scenario](
        port, native, *args)
    print("ok")
