#!/usr/bin/python3
"""A Kafka producer for the failover test (tests/ha/failover_test.cc), through confluent-kafka.

    kafka_producer.py BOOTSTRAP TOPIC PRODUCER_ID PAUSE_MS

Sends one keyed record after another until SIGTERM, each named by its producer and sequence number
the way the test's own producers name theirs ("p<id>.b<seq>.i0.n1", key "k<id>.<seq % 3>"), and
writes one line per delivery report to standard output, at once:

    ack SEQ PARTITION OFFSET SENT_NS ANSWERED_NS
    err SEQ ERROR_NAME SENT_NS ANSWERED_NS

OFFSET is -1 where the report names none: librdkafka acknowledges a record answered "possibly
written" implicitly, without its offset, once a later one is written after it.

with CLOCK_MONOTONIC instants (the test's steady clock). At the end it writes
"requests_timed_out N": the produce requests librdkafka gave up waiting for (from its statistics),
which the test requires to be 0 — the broker must answer every request, error or not.

Idempotent, as librdkafka makes it: a request whose answer it did not get is sent again with the
same producer id and sequence, wherever the partition's leader now is, and the broker keeps the
record once and each key's records in order, five requests in flight or not.
"""
import json
import signal
import sys
import time

from confluent_kafka import Producer

bootstrap, topic, producer_id, pause_ms = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
stopping = False
timeouts = {"n": 0}
sent_at = {}


def stop(_signo, _frame):
    global stopping
    stopping = True


def on_stats(raw):
    stats = json.loads(raw)
    timeouts["n"] = sum(b.get("req_timeouts", 0) for b in stats.get("brokers", {}).values()
                        if b.get("nodeid", -1) >= 0)


def report(err, msg):
    now = time.monotonic_ns()
    seq = int(msg.value().decode().split(".")[1][1:])
    if err is None:
        offset = msg.offset()
        print("ack %d %d %d %d %d" % (seq, msg.partition(), -1 if offset is None or offset < 0 else offset,
                                      sent_at.pop(seq), now), flush=True)
    else:
        print("err %d %s %d %d" % (seq, err.name(), sent_at.pop(seq), now), flush=True)


signal.signal(signal.SIGTERM, stop)
producer = Producer({
    "bootstrap.servers": bootstrap,
    "client.id": "failover-%d" % producer_id,
    "enable.idempotence": True,
    "acks": "all",
    "linger.ms": 0,
    # Longer than the broker's storage.postgres.reply_timeout: the broker answers first.
    "request.timeout.ms": 20000,
    "message.timeout.ms": 120000,
    "retry.backoff.ms": 100,
    "reconnect.backoff.ms": 100,
    "reconnect.backoff.max.ms": 1000,
    "statistics.interval.ms": 1000,
    # Its idempotence state changes on standard error: why a producer stalled, if one does.
    "debug": "eos",
    "stats_cb": on_stats,
})
seq = 0
while not stopping:
    value = "p%d.b%d.i0.n1" % (producer_id, seq)
    sent_at[seq] = time.monotonic_ns()
    while True:
        try:
            producer.produce(topic, key="k%d.%d" % (producer_id, seq % 3), value=value, on_delivery=report)
            break
        except BufferError:
            producer.poll(0.05)
    seq += 1
    producer.poll(pause_ms / 1000.0)
producer.flush(130)
producer.poll(1.5)  # the last statistics
print("requests_timed_out %d" % timeouts["n"], flush=True)
