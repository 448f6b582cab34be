"""confluent-kafka-python (librdkafka) transactions against streamd (docs/TRANSACTIONS.md).

usage: txn_scenarios.py SCENARIO KAFKA_PORT NATIVE_PORT
  eos      consume-transform-produce: COUNT input messages on `txn-in` (3 partitions) are read by group
           `eos` and written, transformed, to `txn-out-a` and `txn-out-b` (3 partitions each), the input
           offsets committed inside each transaction; one transaction in the middle is aborted. A
           read_committed reader then sees every transformed message exactly once and nothing of the
           aborted transaction, a read_uncommitted reader sees that too, and the group's offsets are at
           the input's end.
  fence    a second producer with the same transactional.id fences the first: the first's open
           transaction is aborted (nothing of it is read committed) and its commit fails.
  timeout  a transaction left open past transaction.timeout.ms is aborted by the broker: its commit
           fails, and nothing of it is read committed.
  crash    transactions of 9 messages over 3 partitions, one after another for about 12 s, while the test
           kills the broker with SIGKILL and restarts it and stops it past the client's timeouts; a
           producer that fails is made anew (its init aborts what it left open). Then every
           transaction is read committed whole or not at all, and every one whose commit was answered,
           whole.
  markers  kafka-python 2.0.2 (always read_uncommitted, and without a filter for control records) reads
           a committed and an aborted transaction's messages and no commit or abort marker.
"""
import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from common import check, equal, streamctl

COUNT = 300
PARTITIONS = 3


def producer(port, txn_id, **extra):
    conf = {"bootstrap.servers": "127.0.0.1:%d" % port, "transactional.id": txn_id, "linger.ms": 5}
    conf.update(extra)
    return Producer(conf)


def read_all(port, topic, isolation, group):
    """Every value of every partition of `topic`, from its start to its end at `isolation`."""
    c = Consumer({"bootstrap.servers": "127.0.0.1:%d" % port, "group.id": group, "enable.auto.commit": False,
                  "isolation.level": isolation, "auto.offset.reset": "earliest", "enable.partition.eof": True})
    values = []
    for part in range(PARTITIONS):
        c.assign([TopicPartition(topic, part, 0)])
        while True:
            m = c.poll(10)
            check(m is not None, "%s/%d: no answer within 10 s" % (topic, part))
            if m.error():
                check(m.error().code() == KafkaError._PARTITION_EOF, "consume error: %s" % m.error())
                break
            values.append(m.value().decode())
    c.close()
    return values


def eos(port, native):
    for topic in ("txn-in", "txn-out-a", "txn-out-b"):
        streamctl(native, "create", topic, "--partitions", str(PARTITIONS))
    plain = Producer({"bootstrap.servers": "127.0.0.1:%d" % port})
    for i in range(COUNT):
        plain.produce("txn-in", key=str(i), value="m%d" % i)
    equal(plain.flush(30), 0, "input messages undelivered")

    p = producer(port, "eos-1")
    p.init_transactions(30)
    # One transaction aborted before any input is taken: its writes must never be read committed.
    p.begin_transaction()
    for part in range(PARTITIONS):
        p.produce("txn-out-a", value="aborted", partition=part)
    p.flush(30)
    p.abort_transaction(30)

    c = Consumer({"bootstrap.servers": "127.0.0.1:%d" % port, "group.id": "eos", "enable.auto.commit": False,
                  "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
    c.subscribe(["txn-in"])
    taken = 0
    idle_since = time.time()
    while taken < COUNT:
        batch = c.consume(50, 1)
        batch = [m for m in batch if not m.error()]
        if not batch:
            check(time.time() - idle_since < 60, "input stopped at %d of %d" % (taken, COUNT))
            continue
        idle_since = time.time()
        p.begin_transaction()
        for m in batch:
            out = m.value().decode().upper()
            p.produce("txn-out-a", key=m.key(), value=out)
            p.produce("txn-out-b", key=m.key(), value=out)
        p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 30)
        p.commit_transaction(30)
        taken += len(batch)
    c.close()

    want = sorted("M%d" % i for i in range(COUNT))
    for topic in ("txn-out-a", "txn-out-b"):
        got = read_all(port, topic, "read_committed", "check-committed")
        equal(sorted(got), want, topic + " read committed")
    everything = read_all(port, "txn-out-a", "read_uncommitted", "check-uncommitted")
    equal(everything.count("aborted"), PARTITIONS, "aborted messages read uncommitted")
    equal(len(everything), COUNT + PARTITIONS, "messages read uncommitted")

    g = Consumer({"bootstrap.servers": "127.0.0.1:%d" % port, "group.id": "eos"})
    committed = g.committed([TopicPartition("txn-in", part) for part in range(PARTITIONS)], timeout=30)
    total = 0
    for tp in committed:
        low, high = g.get_watermark_offsets(TopicPartition("txn-in", tp.partition), timeout=30)
        equal(tp.offset, high, "group eos's offset on txn-in/%d" % tp.partition)
        total += high - low
    equal(total, COUNT, "input messages")
    g.close()
    print("eos: %d messages transformed exactly once into 2 topics, 1 transaction aborted" % COUNT)


def commit_fails(p, what):
    try:
        p.commit_transaction(30)
    except KafkaException as e:
        print("%s: commit refused: %s" % (what, e.args[0]))
        return
    check(False, what + ": the commit succeeded")


def fence(port, native):
    streamctl(native, "create", "txn-fence", "--partitions", str(PARTITIONS))
    first = producer(port, "fenced")
    first.init_transactions(30)
    first.begin_transaction()
    first.produce("txn-fence", value="zombie", partition=0)
    first.flush(30)
    second = producer(port, "fenced")
    second.init_transactions(30)  # fences the first and aborts its open transaction
    second.begin_transaction()
    second.produce("txn-fence", value="live", partition=1)
    second.commit_transaction(30)
    commit_fails(first, "fence")
    equal(read_all(port, "txn-fence", "read_committed", "check-fence"), ["live"], "txn-fence read committed")


def timeout(port, native):
    streamctl(native, "create", "txn-slow", "--partitions", str(PARTITIONS))
    p = producer(port, "slow", **{"transaction.timeout.ms": 2000})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce("txn-slow", value="late", partition=0)
    p.flush(30)
    time.sleep(5)  # the broker aborts it meanwhile
    commit_fails(p, "timeout")
    equal(read_all(port, "txn-slow", "read_committed", "check-slow"), [], "txn-slow read committed")


def crash(port, native):
    streamctl(native, "create", "txn-crash", "--partitions", str(PARTITIONS))
    conf = {"transaction.timeout.ms": 10000, "message.timeout.ms": 10000, "request.timeout.ms": 3000,
            "retry.backoff.ms": 50, "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500}
    committed = []
    failures = 0
    p = None
    n = 0
    started = time.time()
    while time.time() - started < 12:
        try:
            if p is None:
                p = producer(port, "crash", **conf)
                p.init_transactions(30)
            p.begin_transaction()
            for part in range(PARTITIONS):
                for j in range(3):
                    p.produce("txn-crash", value="%d:%d:%d" % (n, part, j), partition=part)
            p.commit_transaction(30)
            committed.append(n)
        except KafkaException as e:
            # Whatever its state, the next producer's init aborts or completes it: its outcome is
            # either, never a part.
            failures += 1
            print("transaction %d: %s" % (n, e.args[0]))
            p = None
        n += 1
    # Ends whatever the last producer left open, so that the reader reaches the end.
    last = producer(port, "crash", **conf)
    last.init_transactions(30)
    by_txn = {}
    for v in read_all(port, "txn-crash", "read_committed", "check-crash"):
        by_txn.setdefault(int(v.split(":")[0]), set()).add(v)
    torn = {t: len(vs) for t, vs in by_txn.items() if len(vs) != 3 * PARTITIONS}
    equal(torn, {}, "transactions read in part")
    lost = [t for t in committed if t not in by_txn]
    equal(lost, [], "transactions answered committed and not read")
    check(len(committed) >= 20, "only %d transactions committed" % len(committed))
    print("crash: %d transactions, %d committed, %d failed, %d read whole" % (n, len(committed), failures,
                                                                             len(by_txn)))


def markers(port, native):
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KafkaPythonPartition
    streamctl(native, "create", "txn-kp", "--partitions", "1")
    p = producer(port, "kp")
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(3):
        p.produce("txn-kp", value="committed-%d" % i)
    p.commit_transaction(30)
    p.begin_transaction()
    for i in range(2):
        p.produce("txn-kp", value="aborted-%d" % i)
    p.flush(30)  # written, then aborted (an abort purges what librdkafka has not sent yet)
    p.abort_transaction(30)
    c = KafkaConsumer(bootstrap_servers="127.0.0.1:%d" % port, group_id=None, auto_offset_reset="earliest",
                      consumer_timeout_ms=3000)
    c.assign([KafkaPythonPartition("txn-kp", 0)])
    got = [(m.offset, m.key, m.value.decode()) for m in c]
    c.close()
    equal([v for _, _, v in got], ["committed-0", "committed-1", "committed-2", "aborted-0", "aborted-1"],
          "kafka-python's messages")
    # The markers' offsets (3 and 6) are holes: nothing was delivered there.
    equal([o for o, _, _ in got], [0, 1, 2, 4, 5], "kafka-python's offsets")


if __name__ == "__main__":
    scenario, kafka_port, native_port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    {"eos": eos, "fence": fence, "timeout": timeout, "crash": crash,
     "markers": markers}[scenario](kafka_port, native_port)
