"""What one client writes, every other reads, byte for byte; groups shared with streamctl; the
partitioners of docs/KAFKA.md against streamctl's placement.

usage: interop_scenarios.py SCENARIO KAFKA_PORT NATIVE_PORT
"""
import base64
import json
import os
import struct
import sys
import time

import confluent_kafka
import kafka

from common import check, equal, kcat, run, streamctl
from interop import interop_records, streamd_partitioner

NODE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "node")


def node(*args):
    return run(["node", os.path.join(NODE_DIR, "kafkajs_scenarios.js"), *args], timeout=60)


def b64(v):
    return None if v is None else base64.b64decode(v)


def read_kafka_python(port, topic):
    c = kafka.KafkaConsumer(bootstrap_servers="127.0.0.1:%d" % port, group_id=None, auto_offset_reset="earliest",
                            consumer_timeout_ms=3000, check_crcs=True)
    c.assign([kafka.TopicPartition(topic, 0)])
    out = [(m.key, m.value, [(k, v) for k, v in m.headers]) for m in c]
    c.close()
    return out


def read_kcat(port, topic):
    # Values through %R (their length as a 4-byte big-endian integer, -1 for null) so that any byte
    # survives; keys (text here) through %K, their length as text.
    raw = kcat(port, "-C", "-t", topic, "-p", "0", "-e", "-f", "%R%s")
    values, i = [], 0
    while i < len(raw):
        (n,) = struct.unpack(">i", raw[i:i + 4])
        i += 4
        values.append(None if n < 0 else raw[i:i + n])
        i += max(n, 0)
    keys = []
    for line in kcat(port, "-C", "-t", topic, "-p", "0", "-e", "-f", "%K:%k\n").splitlines():
        length, key = line.split(b":", 1)
        keys.append(None if int(length) < 0 else key)
    equal(len(keys), len(values), "kcat's keys and values")
    return list(zip(keys, values))


def read_confluent(port, topic):
    c = confluent_kafka.Consumer({"bootstrap.servers": "127.0.0.1:%d" % port, "group.id": "interop-ck",
                                  "enable.auto.commit": False})
    c.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
    out = []
    deadline = time.time() + 15
    end = c.get_watermark_offsets(confluent_kafka.TopicPartition(topic, 0), timeout=10)[1]
    while len(out) < end and time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            out.append((m.key(), m.value(), list(m.headers() or [])))
    c.close()
    return out


def kafka_writes(port, native):
    streamctl(native, "create", "iw", "--partitions", "1")
    node("write", str(port), "iw")
    want = interop_records()
    equal(read_kafka_python(port, "iw"), want, "kafkajs → kafka-python")
    equal(read_kcat(port, "iw"), [(k, v) for k, v, _ in want], "kafkajs → kcat")
    # streamctl: a null key is an empty key, a null value an empty payload (docs/KAFKA.md §Mapping).
    entries = streamctl(native, "consume", "iw")
    got = [(b64(e["key_b64"]), b64(e["payload_b64"]), [(h["name"], b64(h["value_b64"])) for h in e["headers"]])
           for e in entries]
    equal(got, [(k or b"", v or b"", h) for k, v, h in want], "kafkajs → streamctl")


def streamctl_writes(port, native):
    streamctl(native, "create", "sw", "--partitions", "1")
    streamctl(native, "produce", "sw", "--key", "alpha", "--header", "src=ctl", "--value", "one", "--value", "two")
    streamctl(native, "produce", "sw", "--value", "unkeyed")
    want = [(b"alpha", b"one", [("src", b"ctl")]), (b"alpha", b"two", [("src", b"ctl")]), (None, b"unkeyed", [])]
    equal(read_kafka_python(port, "sw"), want, "streamctl → kafka-python")
    equal(read_confluent(port, "sw"), want, "streamctl → confluent-kafka")
    equal(read_kcat(port, "sw"), [(k, v) for k, v, _ in want], "streamctl → kcat")
    lines = [json.loads(l) for l in node("read", str(port), "sw").decode().splitlines()]
    equal([(b64(r["key"]), b64(r["value"]), [(k, b64(v)) for k, v in r["headers"]]) for r in lines], want,
          "streamctl → kafkajs")


def groups(port, native):
    streamctl(native, "create", "gi", "--partitions", "1")
    streamctl(native, "produce", "gi", *sum([["--value", "r%d" % i] for i in range(10)], []))
    settings = {"bootstrap.servers": "127.0.0.1:%d" % port, "group.id": "shared", "auto.offset.reset": "earliest",
                "enable.auto.commit": False, "session.timeout.ms": 6000}

    def kafka_read(n):
        c = confluent_kafka.Consumer(settings)
        c.subscribe(["gi"])
        got = []
        deadline = time.time() + 20
        while len(got) < n and time.time() < deadline:
            m = c.poll(0.3)
            if m is not None and not m.error():
                got.append(m.offset())
                c.commit(message=m, asynchronous=False)
        c.close()
        return got

    equal(kafka_read(4), [0, 1, 2, 3], "the Kafka consumer's first four")
    rows = [g for g in streamctl(native, "groups", "gi")[0] if g["group"] == "shared"]
    equal([(g["committed"], g["lag"]) for g in rows], [(4, 6)], "streamctl groups after the Kafka commit")
    resumed = streamctl(native, "consume", "gi", "--group", "shared", "--max", "3")
    equal([e["offset"] for e in resumed], [4, 5, 6], "streamctl resumes where the Kafka consumer stopped")
    equal(kafka_read(3), [7, 8, 9], "the Kafka consumer resumes where streamctl stopped")


def placement(port, native):
    keys = ["key-%d" % i for i in range(30)]
    for topic in ("pl-js", "pl-py", "pl-ctl"):
        streamctl(native, "create", topic, "--partitions", "6")
    node("placement", str(port), "pl-js")
    p = kafka.KafkaProducer(bootstrap_servers="127.0.0.1:%d" % port, partitioner=streamd_partitioner)
    for i, k in enumerate(keys):
        p.send("pl-py", key=k.encode(), value=b"v%d" % i)
    p.flush(10)
    p.close()
    for i, k in enumerate(keys):
        streamctl(native, "produce", "pl-ctl", "--key", k, "--value", "v%d" % i)

    def placed(topic):
        return {e["key"]: e["partition"] for e in streamctl(native, "consume", topic)}

    ctl = placed("pl-ctl")
    equal(len(ctl), 30, "keys streamctl placed")
    equal(placed("pl-js"), ctl, "kafkajs with streamd's partitioner vs streamctl")
    equal(placed("pl-py"), ctl, "kafka-python with streamd's partitioner vs streamctl")


if __name__ == "__main__":
    scenario, port, native = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    {"kafka-writes": kafka_writes, "streamctl-writes": streamctl_writes, "groups": groups,
     "placement": placement}[scenario](port, native)
    print("ok")
