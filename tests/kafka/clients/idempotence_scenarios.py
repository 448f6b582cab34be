"""confluent-kafka-python (librdkafka) with enable.idempotence against streamd, while the test kills the
broker with SIGKILL and restarts it, and stops it with SIGSTOP past request.timeout.ms (docs/KAFKA.md
§Idempotent producers).

usage: idempotence_scenarios.py SCENARIO KAFKA_PORT NATIVE_PORT COUNT
  produce   COUNT messages, each carrying its own id, keyed by id % 50, to topic `idem` (3 partitions);
            waits for every delivery report, then reads the topic back: every acknowledged message
            exactly once, each key's messages in order; none appears twice. Prints the counts.
"""
import sys
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from common import check, equal, streamctl

KEYS = 50


def produce(port, native, count):
    streamctl(native, "create", "idem", "--partitions", "3")
    p = Producer({
        "bootstrap.servers": "127.0.0.1:%d" % port,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 5,
        "request.timeout.ms": 3000,
        "message.timeout.ms": 300000,
        "retry.backoff.ms": 50,
        "reconnect.backoff.ms": 50,
        "reconnect.backoff.max.ms": 500,
    })
    delivered = {}
    failed = []

    def on_delivery(err, msg):
        i = int(msg.value().decode())
        if err is not None:
            failed.append((i, str(err)))
            return
        check(i not in delivered, "message %d reported delivered twice" % i)
        delivered[i] = (msg.partition(), msg.offset())

    for i in range(count):
        while True:
            try:
                p.produce("idem", key=str(i % KEYS), value=str(i), on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.05)
        if i % 1000 == 0:
            p.poll(0)
            time.sleep(0.1)  # spread the messages over the faults the test makes (about 10 s)
    left = p.flush(300)
    equal(left, 0, "messages still undelivered after flush")
    equal(failed, [], "messages whose delivery failed")
    equal(len(delivered), count, "messages delivered")

    # Read every partition back from its start to its end.
    c = Consumer({"bootstrap.servers": "127.0.0.1:%d" % port, "group.id": "idem-check",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    seen = {}
    duplicates = 0
    for part in range(3):
        low, high = c.get_watermark_offsets(TopicPartition("idem", part), timeout=30)
        c.assign([TopicPartition("idem", part, low)])
        last_of_key = {}
        at = low
        while at < high:
            m = c.poll(10)
            check(m is not None, "partition %d: nothing read at %d of %d" % (part, at, high))
            if m.error():
                check(m.error().code() == KafkaError._PARTITION_EOF, "consume error: %s" % m.error())
                continue
            i = int(m.value().decode())
            if i in seen:
                duplicates += 1
            seen[i] = (m.partition(), m.offset())
            key = i % KEYS
            check(last_of_key.get(key, -1) < i, "key %d: message %d after %d" % (key, i, last_of_key.get(key, -1)))
            last_of_key[key] = i
            at = m.offset() + 1
        c.unassign()
    c.close()
    equal(duplicates, 0, "messages stored twice")
    for i, where in delivered.items():
        check(seen.get(i) == where, "message %d: delivered at %r, stored at %r" % (i, where, seen.get(i)))
    print("idempotence: %d messages delivered once each, %d stored, 0 twice" % (len(delivered), len(seen)))


if __name__ == "__main__":
    scenario, kafka_port, native_port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    if scenario == "produce":
        produce(kafka_port, native_port, count)
    else:
        print("unknown scenario " + scenario, file=sys.stderr)
        sys.exit(2)
