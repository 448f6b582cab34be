"""kcat against streamd's Kafka listener: metadata, produce with keys, headers and a tombstone,
consume from every kind of start, compression round trips, a balanced consumer group of two, and a
transactional producer (-X transactional.id), which commits at the end of its input.

usage: kcat_scenarios.py SCENARIO KAFKA_PORT NATIVE_PORT
"""
import json
import subprocess
import sys
import time

from common import check, equal, kcat, streamctl


def basic(port, native):
    # Metadata lists the broker as the advertised address and every topic with its partitions.
    streamctl(native, "create", "kc", "--partitions", "2")
    meta = json.loads(kcat(port, "-L", "-J"))
    equal([(b["id"], b["name"]) for b in meta["brokers"]], [(0, "127.0.0.1:%d" % port)], "brokers")
    topics = {t["topic"]: t for t in meta["topics"]}
    check("kc" in topics, "kc in metadata %r" % topics.keys())
    equal(len(topics["kc"]["partitions"]), 2, "partitions of kc")

    # Keys (-K), headers (-H) and a tombstone (-Z: an empty value is sent as null), to partition 0.
    before_ms = int(time.time() * 1000)
    kcat(port, "-P", "-t", "kc", "-p", "0", "-K", ":", "-Z", "-H", "app=kcat", "-H", "n=1",
         stdin=b"k1:one\nk2:two\nk1:\n")
    after_ms = int(time.time() * 1000)
    fmt = "%k|%s|%o|%h|%T\\n"
    lines = kcat(port, "-C", "-t", "kc", "-p", "0", "-e", "-f", fmt).decode().splitlines()
    rows = [l.split("|") for l in lines]
    equal([(r[0], r[1], r[2]) for r in rows], [("k1", "one", "0"), ("k2", "two", "1"), ("k1", "", "2")],
          "key, value, offset from the beginning")
    equal(rows[0][3], "app=kcat,n=1", "headers")
    # The tombstone reads back as a null value (kcat -Z prints NULL for null).
    null_line = kcat(port, "-C", "-t", "kc", "-p", "0", "-o", "2", "-e", "-Z", "-f", "%s\\n").decode()
    equal(null_line, "NULL\n", "the tombstone's value")
    # streamctl sees the same records: the tombstone is an empty payload under its key.
    entries = streamctl(native, "consume", "kc", "--partition", "0")
    equal([(e["key"], e["payload"], e["offset"]) for e in entries],
          [("k1", "one", 0), ("k2", "two", 1), ("k1", "", 2)], "streamctl's view")
    equal([(h["name"], h["value"]) for h in entries[0]["headers"]], [("app", "kcat"), ("n", "1")],
          "headers via streamctl")

    # -o end, -o -1 (the last record), -o N, and -o s@T (the first record whose timestamp, here the
    # producer's own (CreateTime, the default), is at or after T ms).
    equal(kcat(port, "-C", "-t", "kc", "-p", "0", "-o", "end", "-e", "-f", "%o\\n"), b"", "from the end")
    equal(kcat(port, "-C", "-t", "kc", "-p", "0", "-o", "-1", "-e", "-f", "%o\\n"), b"2\n", "-o -1")
    equal(kcat(port, "-C", "-t", "kc", "-p", "0", "-o", "1", "-e", "-f", "%o\\n"), b"1\n2\n", "-o 1")
    append_ms = int(rows[0][4])
    time.sleep(0.01)
    cut = int(time.time() * 1000)
    time.sleep(0.01)
    kcat(port, "-P", "-t", "kc", "-p", "0", stdin=b"later\n")
    equal(kcat(port, "-C", "-t", "kc", "-p", "0", "-o", "s@%d" % cut, "-e", "-f", "%s@%o\\n"), b"later@3\n",
          "-o s@T after the first batch")
    equal(kcat(port, "-C", "-t", "kc", "-p", "0", "-o", "s@%d" % append_ms, "-e", "-f", "%o\\n"),
          b"0\n1\n2\n3\n", "-o s@T at the first record's timestamp")
    # Every record carries the time kcat produced it at (CreateTime).
    check(all(before_ms <= int(r[4]) <= after_ms for r in rows),
          "producer timestamps within the produce: %d..%d, %r" % (before_ms, after_ms, rows))


def compression(port, native):
    for codec in ("gzip", "snappy", "lz4", "zstd"):
        topic = "z-" + codec
        values = [("%s-%d-" % (codec, i) + "x" * (i * 37)).encode() for i in range(50)]
        kcat(port, "-P", "-t", topic, "-z", codec, stdin=b"\n".join(values) + b"\n")
        got = kcat(port, "-C", "-t", topic, "-e", "-f", "%s\\n").splitlines()
        equal(got, values, codec + " round trip")
        equal([e["payload"].encode() for e in streamctl(native, "consume", topic)], values, codec + " via streamctl")


def group(port, native):
    streamctl(native, "create", "kg", "--partitions", "4")
    # Two balanced consumers (-G) in one group: each gets partitions, together all four.
    members = []
    for i in range(2):
        members.append(subprocess.Popen(
            ["kcat", "-b", "127.0.0.1:%d" % port, "-G", "kcg", "-o", "beginning", "-f", "%p %s\\n",
             "-X", "session.timeout.ms=6000", "-X", "heartbeat.interval.ms=500", "kg"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        time.sleep(0.5)
    try:
        time.sleep(4)  # the second join rebalances the first member; both get partitions
        for p in range(4):
            kcat(port, "-P", "-t", "kg", "-p", str(p), stdin=("m%d\n" % p).encode())
        time.sleep(3)
    finally:
        outs = []
        for m in members:
            m.terminate()
            out, err = m.communicate(timeout=20)
            outs.append(out.decode().splitlines())
    seen = [sorted(o) for o in outs]
    everything = sorted(seen[0] + seen[1])
    equal(everything, ["0 m0", "1 m1", "2 m2", "3 m3"], "every record consumed once across the group")
    check(seen[0] and seen[1], "both members got partitions: %r" % seen)
    # The group committed on close: streamctl shows its offsets with no lag.
    groups = [g for g in streamctl(native, "groups", "kg")[0] if g["group"] == "kcg"]
    equal(sorted((g["partition"], g["committed"], g["lag"]) for g in groups),
          [(p, 1, 0) for p in range(4)], "committed offsets via streamctl")


def transactional(port, native):
    streamctl(native, "create", "kt", "--partitions", "2")

    def read(isolation):
        return sorted(kcat(port, "-C", "-t", "kt", "-e", "-f", "%s\\n", "-X", "isolation.level=" + isolation)
                      .decode().splitlines())

    # All of stdin is one transaction, committed when it ends.
    kcat(port, "-P", "-t", "kt", "-K", ":", "-X", "transactional.id=kcat-1", stdin=b"k1:a\nk2:b\nk3:c\n")
    equal(read("read_committed"), ["a", "b", "c"], "committed at the end of the input")
    described = streamctl(native, "txn", "describe", "kcat-1")[0]
    equal(described["state"], "CompleteCommit", "the coordinator's state")

    # A second run of the same id is its next epoch; both transactions read whole at either level.
    kcat(port, "-P", "-t", "kt", "-p", "1", "-X", "transactional.id=kcat-1", stdin=b"d\ne\n")
    equal(read("read_committed"), ["a", "b", "c", "d", "e"], "the second transaction")
    equal(read("read_uncommitted"), ["a", "b", "c", "d", "e"], "read_uncommitted: no marker shows")
    equal(streamctl(native, "txn", "describe", "kcat-1")[0]["epoch"], described["epoch"] + 1, "the next epoch")
    bounds = streamctl(native, "bounds", "kt")[0]
    check(all(b["last_stable"] == b["next"] for b in bounds), "nothing left open: %r" % bounds)

if __name__ == "__main__":
    scenario, port, native = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    {"basic": basic, "compression": compression, "group": group, "transactional": transactional}[scenario](
        port, native)
    print("ok")
