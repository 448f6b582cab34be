"""The real Kafka clients against streamd's Kafka TLS listener, with SASL and per-stream rights.

usage: security_scenarios.py SCENARIO TLS_PORT NATIVE_PORT PLAIN_PORT CERT_DIR
The test's access file (kafka_clients_test.cc) holds the principals root (all on *), ingest (write on
orders.*), reader (read on orders.*) and the certificate subject CN=alice,O=streamd tests (read,write
on tls.*); each principal's token is "t-" and its name, and its SCRAM passwords are the same token.
CERT_DIR holds ca.crt, and client.crt and client.key (alice).
  kcat_ssl        security.protocol=ssl with alice's certificate; a TLS client on the plaintext port
  kcat_sasl       sasl_ssl with PLAIN and SCRAM-SHA-512: rights held and refused, a wrong password
  confluent       confluent-kafka-python with SCRAM-SHA-256: produce, a group consumer, refusals
  kafka_python    kafka-python with SCRAM-SHA-512 over SSL
"""
import os
import subprocess
import sys
import time

from common import check, equal, run, streamctl

scenario, tls_port, native, plain_port, cert_dir = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
    int(sys.argv[4]), sys.argv[5]
CA = os.path.join(cert_dir, "ca.crt")


def ctl(*args, stdin=None):
    return streamctl(native, "--token", "t-root", *args, stdin=stdin)


def kcat_tls(*args, sasl=None, user=None, password=None, stdin=None, check_rc=True):
    argv = ["kcat", "-b", "localhost:%d" % tls_port, "-X", "ssl.ca.location=" + CA]
    if sasl is None:
        argv += ["-X", "security.protocol=ssl", "-X", "ssl.certificate.location=" + os.path.join(cert_dir, "client.crt"),
                 "-X", "ssl.key.location=" + os.path.join(cert_dir, "client.key")]
    else:
        argv += ["-X", "security.protocol=sasl_ssl", "-X", "sasl.mechanisms=" + sasl, "-X", "sasl.username=" + user,
                 "-X", "sasl.password=" + password]
    argv += list(args)
    if check_rc:
        return run(argv, stdin=stdin)
    return subprocess.run(argv, input=stdin, capture_output=True, timeout=60)


def kcat_ssl():
    ctl("create", "tls.a", "--partitions", "2")
    # Metadata names the TLS listener's advertised address; alice may see tls.* only.
    meta = kcat_tls("-L").decode()
    check("localhost:%d" % tls_port in meta or "127.0.0.1:%d" % tls_port in meta, "TLS broker address in %s" % meta)
    check('topic "tls.a"' in meta, "tls.a in metadata: %s" % meta)
    kcat_tls("-P", "-t", "tls.a", "-p", "0", "-K", ":", stdin=b"k1:one\nk2:two\n")
    got = kcat_tls("-C", "-t", "tls.a", "-p", "0", "-e", "-f", "%k=%s\\n").decode().splitlines()
    equal(got, ["k1=one", "k2=two"], "records over TLS")
    # What alice may not touch is refused by topic.
    ctl("create", "payroll")
    refused = kcat_tls("-P", "-t", "payroll", "-p", "0", stdin=b"x\n", check_rc=False)
    check(refused.returncode != 0, "alice's produce to payroll was refused")
    check(b"uthoriz" in refused.stderr, "an authorization error: %r" % refused.stderr)
    equal(len(ctl("consume", "payroll")), 0, "payroll untouched")
    # A TLS client on the plaintext port fails; the broker goes on serving.
    wrong = subprocess.run(["kcat", "-b", "127.0.0.1:%d" % plain_port, "-X", "security.protocol=ssl",
                            "-X", "ssl.ca.location=" + CA, "-m", "3", "-L"], capture_output=True, timeout=60)
    check(wrong.returncode != 0, "TLS to the plaintext port fails: %r" % wrong.stdout)
    equal(kcat_tls("-C", "-t", "tls.a", "-p", "0", "-e", "-c", "1", "-f", "%s\\n"), b"one\n", "still serving")


def kcat_sasl():
    ctl("create", "orders.eu")
    ctl("create", "payroll")
    kcat_tls("-P", "-t", "orders.eu", "-p", "0", sasl="PLAIN", user="ingest", password="t-ingest", stdin=b"a\nb\n")
    got = kcat_tls("-C", "-t", "orders.eu", "-p", "0", "-e", "-f", "%s\\n", sasl="SCRAM-SHA-512", user="reader",
                   password="t-reader")
    equal(got, b"a\nb\n", "reader reads what ingest wrote")
    refused = kcat_tls("-P", "-t", "payroll", "-p", "0", sasl="SCRAM-SHA-512", user="ingest", password="t-ingest",
                       stdin=b"x\n", check_rc=False)
    check(refused.returncode != 0 and b"uthoriz" in refused.stderr, "ingest refused on payroll: %r" % refused.stderr)
    refused = kcat_tls("-P", "-t", "orders.eu", "-p", "0", sasl="SCRAM-SHA-256", user="reader", password="t-reader",
                       stdin=b"x\n", check_rc=False)
    check(refused.returncode != 0 and b"uthoriz" in refused.stderr, "reader may not write: %r" % refused.stderr)
    for mechanism in ("PLAIN", "SCRAM-SHA-512"):
        bad = kcat_tls("-m", "5", "-L", sasl=mechanism, user="reader", password="wrong", check_rc=False)
        check(bad.returncode != 0, "%s with a wrong password fails" % mechanism)
        check(b"uthenticat" in bad.stderr, "%s: an authentication error: %r" % (mechanism, bad.stderr))
    equal(len(ctl("consume", "orders.eu")), 2, "nothing refused was written")


def confluent():
    from confluent_kafka import Consumer, KafkaError, Producer

    ctl("create", "orders.us", "--partitions", "2")
    ctl("create", "payroll")

    def conf(user, password, **extra):
        c = {"bootstrap.servers": "localhost:%d" % tls_port, "security.protocol": "sasl_ssl",
             "sasl.mechanisms": "SCRAM-SHA-256", "sasl.username": user, "sasl.password": password,
             "ssl.ca.location": CA}
        c.update(extra)
        return c

    p = Producer(conf("ingest", "t-ingest", acks="all"))
    # Reports per topic: the two topics' batches are answered in no particular order.
    reports = {"orders.us": [], "payroll": []}

    def report(err, msg):
        reports[msg.topic()].append(None if err is None else err.code())

    for i in range(20):
        p.produce("orders.us", key=b"k%d" % i, value=b"v%d" % i, on_delivery=report)
    p.produce("payroll", value=b"x", on_delivery=report)
    equal(p.flush(20), 0, "messages left")
    equal(reports["orders.us"], [None] * 20, "orders.us deliveries")
    equal(reports["payroll"], [KafkaError.TOPIC_AUTHORIZATION_FAILED], "payroll refused")

    c = Consumer(conf("reader", "t-reader", **{"group.id": "billing", "auto.offset.reset": "earliest",
                                              "enable.auto.commit": False}))
    c.subscribe(["orders.us"])
    got = []
    deadline = time.time() + 30
    while len(got) < 20 and time.time() < deadline:
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        got.append(m.value())
    equal(sorted(got), sorted(b"v%d" % i for i in range(20)), "the group read every record")
    c.commit(asynchronous=False)
    c.close()
    committed = ctl("committed", "orders.us", "--group", "billing")[0]  # one array of partitions
    equal(sum(c["offset"] for c in committed), 20, "committed offsets")

    # ingest holds no read anywhere: the group APIs refuse it.
    c = Consumer(conf("ingest", "t-ingest", **{"group.id": "nosy", "auto.offset.reset": "earliest"}))
    c.subscribe(["orders.us"])
    errors = []
    deadline = time.time() + 20
    while not errors and time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error():
            errors.append(m.error())
    c.close()
    check(errors and errors[0].code() == KafkaError.GROUP_AUTHORIZATION_FAILED,
          "GROUP_AUTHORIZATION_FAILED for ingest: %r" % errors)

    # A wrong SCRAM password: the client reports the failed login.
    errors = []
    bad = Producer(conf("reader", "nope", error_cb=lambda e: errors.append(e)))
    bad.produce("orders.us", value=b"never")
    deadline = time.time() + 20
    while not errors and time.time() < deadline:
        bad.poll(0.2)
    check(errors and errors[0].code() == KafkaError._AUTHENTICATION, "authentication error: %r" % errors)
    bad.purge()
    equal(len(ctl("consume", "orders.us")), 20, "nothing refused was written")


def kafka_python():
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.errors import NoBrokersAvailable

    ctl("create", "orders.kp")
    common = {"bootstrap_servers": "localhost:%d" % tls_port, "security_protocol": "SASL_SSL",
              "sasl_mechanism": "SCRAM-SHA-512", "ssl_cafile": CA}
    p = KafkaProducer(sasl_plain_username="ingest", sasl_plain_password="t-ingest", acks="all", **common)
    for i in range(5):
        p.send("orders.kp", key=b"k", value=b"m%d" % i).get(timeout=20)
    p.close()
    c = KafkaConsumer(sasl_plain_username="reader", sasl_plain_password="t-reader", group_id=None,
                      auto_offset_reset="earliest", consumer_timeout_ms=5000, **common)
    c.assign([TopicPartition("orders.kp", 0)])
    equal([m.value for m in c], [b"m%d" % i for i in range(5)], "kafka-python over SASL_SSL")
    c.close()
    # kafka-python 2.0.2 logs in after a v0 SaslHandshake, with bare frames that have no room for an
    # error: the broker refuses by closing the connection (as Kafka does), which kafka-python reports
    # as no broker reachable. kafka_clients_test.cc checks the broker's log for the refused login.
    try:
        KafkaProducer(sasl_plain_username="reader", sasl_plain_password="wrong", **common)
        check(False, "a wrong password was accepted")
    except NoBrokersAvailable:
        pass


{"kcat_ssl": kcat_ssl, "kcat_sasl": kcat_sasl, "confluent": confluent, "kafka_python": kafka_python}[scenario]()
