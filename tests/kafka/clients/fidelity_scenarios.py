"""What a Kafka client sends comes back as it sent it: the producer's timestamp, null against empty for
keys, values and header values; a time lookup past the last record answers "none"; and a consumer whose
fetch.max.bytes two large records exceed still drains both partitions (KIP-74).

usage: fidelity_scenarios.py SCENARIO KAFKA_PORT NATIVE_PORT
  confluent     confluent-kafka-python (librdkafka) produces and consumes the exact records
  kafka_python  the same with kafka-python
  kcat          kcat reads what confluent-kafka wrote (timestamps, nulls) and produces its own nulls
  bigfetch      confluent-kafka consumer, fetch.max.bytes=1000000, two partitions of ~900 KiB records
"""
import sys
import time

import confluent_kafka
import kafka

from common import check, equal, kcat, streamctl

# Timestamps from 2017: nothing near the broker's clock, so a CreateTime read cannot be an append time.
T0 = 1_500_000_000_000

# (key, value, headers, timestamp): a tombstone, an empty value, no key with a null and an empty
# header value, an empty key with an earlier timestamp.
RECORDS = [
    (b"k", None, [], T0),
    (b"k", b"", [], T0 + 10),
    (None, b"v", [("h", None), ("e", b"")], T0 + 20),
    (b"", b"x", [], T0 + 5),
]


def create(native, topic):
    streamctl(native, "create", topic, "--partitions", "1")


def native_view(native, topic):
    """streamctl has no nulls: each reads as empty; its entries carry the broker's appended_at."""
    entries = streamctl(native, "consume", topic)
    equal([(e["key"], e["payload"]) for e in entries], [("k", ""), ("k", ""), ("", "v"), ("", "x")],
          "streamctl reads nulls as empty")
    equal([(h["name"], h["value"]) for h in entries[2]["headers"]], [("h", ""), ("e", "")],
          "streamctl reads a null header value as empty")
    check(all(e["appended_at"].startswith(time.strftime("%Y", time.gmtime())) for e in entries),
          "appended_at is the broker's clock: %r" % [e["appended_at"] for e in entries])


def produce_confluent(port, topic):
    p = confluent_kafka.Producer({"bootstrap.servers": "127.0.0.1:%d" % port, "linger.ms": 50})
    for key, value, headers, ts in RECORDS:
        p.produce(topic, key=key, value=value, headers=headers, timestamp=ts, partition=0)
    equal(p.flush(20), 0, "messages not delivered")


def consume_confluent(port, topic, count):
    c = confluent_kafka.Consumer({"bootstrap.servers": "127.0.0.1:%d" % port, "group.id": "fid-" + topic,
                                  "enable.auto.commit": False})
    c.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.time() + 20
    while len(got) < count and time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append(m)
    return c, got


def confluent(port, native):
    create(native, "fid-ck")
    produce_confluent(port, "fid-ck")
    c, got = consume_confluent(port, "fid-ck", len(RECORDS))
    equal([(m.key(), m.value()) for m in got], [(k, v) for k, v, _, _ in RECORDS], "keys and values, nulls apart")
    equal([list(m.headers() or []) for m in got], [h for _, _, h, _ in RECORDS], "headers, a null apart")
    equal([m.timestamp() for m in got],
          [(confluent_kafka.TIMESTAMP_CREATE_TIME, ts) for _, _, _, ts in RECORDS], "producer timestamps")
    # The first record at or after the time, by create time: T0 + 7 is record 1's (T0 + 10), though
    # record 3 (T0 + 5) comes later; past every record, offset -1: "none".
    tp = lambda ts: confluent_kafka.TopicPartition("fid-ck", 0, ts)
    equal(c.offsets_for_times([tp(T0 + 7)], timeout=10)[0].offset, 1, "offsets_for_times by create time")
    equal(c.offsets_for_times([tp(T0)], timeout=10)[0].offset, 0, "offsets_for_times at the first record")
    equal(c.offsets_for_times([tp(T0 + 21)], timeout=10)[0].offset, -1, "offsets_for_times past every record")
    c.close()
    native_view(native, "fid-ck")


def kafka_python(port, native):
    create(native, "fid-kp")
    p = kafka.KafkaProducer(bootstrap_servers="127.0.0.1:%d" % port, linger_ms=50)
    # kafka-python sends no null header value (its producer insists on bytes): it sends an empty one and
    # reads confluent-kafka's null below.
    for key, value, headers, ts in RECORDS:
        headers = [(name, b"" if v is None else v) for name, v in headers]
        p.send("fid-kp", key=key, value=value, headers=headers, timestamp_ms=ts, partition=0)
    p.flush(20)
    p.close()
    c = kafka.KafkaConsumer(bootstrap_servers="127.0.0.1:%d" % port, group_id=None, auto_offset_reset="earliest",
                            consumer_timeout_ms=5000)
    tp = kafka.TopicPartition("fid-kp", 0)
    c.assign([tp])
    got = list(c)
    equal([(m.key, m.value) for m in got], [(k, v) for k, v, _, _ in RECORDS], "keys and values, nulls apart")
    equal([list(m.headers) for m in got], [[(n, b"" if v is None else v) for n, v in h] for _, _, h, _ in RECORDS],
          "headers as sent")
    equal([(m.timestamp_type, m.timestamp) for m in got], [(0, ts) for _, _, _, ts in RECORDS],
          "producer timestamps, CreateTime")
    found = c.offsets_for_times({tp: T0 + 7})[tp]
    equal((found.offset, found.timestamp), (1, T0 + 10), "offsets_for_times by create time")
    equal(c.offsets_for_times({tp: T0 + 21}), {tp: None}, "offsets_for_times past every record")
    c.close()
    native_view(native, "fid-kp")
    # The null header value confluent-kafka writes reads back as None, not as empty.
    create(native, "fid-kp-null")
    produce_confluent(port, "fid-kp-null")
    c = kafka.KafkaConsumer(bootstrap_servers="127.0.0.1:%d" % port, group_id=None, auto_offset_reset="earliest",
                            consumer_timeout_ms=5000)
    c.assign([kafka.TopicPartition("fid-kp-null", 0)])
    got = list(c)
    c.close()
    equal([list(m.headers) for m in got], [h for _, _, h, _ in RECORDS], "headers, a null apart")


def kcat_scenario(port, native):
    create(native, "fid-kc")
    produce_confluent(port, "fid-kc")
    # %T the timestamp, %K/%S the key's and value's lengths (-1 for null), %h the headers.
    lines = kcat(port, "-C", "-t", "fid-kc", "-p", "0", "-e", "-f", "%T|%K|%S|%k|%s\\n").decode().splitlines()
    equal(lines, ["%d|1|-1|k|" % T0, "%d|1|0|k|" % (T0 + 10), "%d|-1|1||v" % (T0 + 20), "%d|0|1||x" % (T0 + 5)],
          "kcat: timestamps, key and value lengths")
    headers = kcat(port, "-C", "-t", "fid-kc", "-p", "0", "-o", "2", "-c", "1", "-e", "-f", "%h\\n").decode()
    check(headers.startswith("h=") and "e=" in headers, "kcat: headers of record 2: %r" % headers)
    # -Q: a time past every record has no offset (-1).
    query = kcat(port, "-Q", "-t", "fid-kc:0:%d" % (T0 + 21)).decode()
    check(":-1" in query.replace(" ", "") or "offset -1" in query, "kcat -Q past every record: %r" % query)
    query = kcat(port, "-Q", "-t", "fid-kc:0:%d" % (T0 + 7)).decode()
    check("offset 1" in query, "kcat -Q by create time: %r" % query)
    # kcat's own nulls: -Z sends an empty value as null; without it an empty value stays empty.
    before = int(time.time() * 1000)
    kcat(port, "-P", "-t", "fid-kc", "-p", "0", "-K", ":", "-Z", stdin=b"tomb:\n")
    kcat(port, "-P", "-t", "fid-kc", "-p", "0", "-K", ":", stdin=b"kept:\n")
    after = int(time.time() * 1000)
    # %S is the value's length, -1 for null (a consumer's -Z would print an empty value as NULL too).
    lines = kcat(port, "-C", "-t", "fid-kc", "-p", "0", "-o", "4", "-e", "-f", "%k|%S|%T\\n").decode().splitlines()
    equal([l.split("|")[:2] for l in lines], [["tomb", "-1"], ["kept", "0"]], "kcat: -Z null against empty")
    check(all(before <= int(l.split("|")[2]) <= after for l in lines), "kcat's own create times: %r" % lines)


def bigfetch(port, native):
    streamctl(native, "create", "fid-big", "--partitions", "2")
    p = confluent_kafka.Producer({"bootstrap.servers": "127.0.0.1:%d" % port, "linger.ms": 0})
    value = b"x" * (900 << 10)
    for partition in (0, 1):
        for i in range(3):
            p.produce("fid-big", key=b"%d-%d" % (partition, i), value=value, partition=partition)
            p.flush(20)
    c = confluent_kafka.Consumer({"bootstrap.servers": "127.0.0.1:%d" % port, "group.id": "fid-big",
                                  "enable.auto.commit": False, "fetch.max.bytes": 1000000,
                                  "auto.offset.reset": "earliest"})
    c.assign([confluent_kafka.TopicPartition("fid-big", 0, 0), confluent_kafka.TopicPartition("fid-big", 1, 0)])
    got = set()
    deadline = time.time() + 30
    while len(got) < 6 and time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.add(m.key())
    c.close()
    equal(sorted(got), sorted(b"%d-%d" % (p_, i) for p_ in (0, 1) for i in range(3)),
          "both partitions drained under fetch.max.bytes=1000000")


if __name__ == "__main__":
    scenario, port, native = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    {"confluent": confluent, "kafka_python": kafka_python, "kcat": kcat_scenario, "bigfetch": bigfetch}[scenario](
        port, native)
    print("ok")
