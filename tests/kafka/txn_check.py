#!/usr/bin/python3
"""A Jepsen-style checker for Kafka transactions against one streamd node, under faults
(docs/RELIABILITY.md §Transactions under faults; what is guaranteed: docs/SEMANTICS.md §12).

usage: txn_check.py --streamd PATH --streamctl PATH [--seconds 60] [--workers 4] [--seed N]
                    [--nemesis kill,pause,worker[,timeout]] [--idempotent-only] [--dir DIR] [--keep]
       txn_check.py --recheck DIR

Run it with Debian's /usr/bin/python3, which has confluent-kafka (librdkafka 2.0.2).

It starts streamd on loopback in a fresh directory, creates 2 topics of 3 partitions (key k is
partition k % 3 of topic k // 3) and runs W worker processes. Each worker owns a transactional.id, a
transactional producer and a read_committed consumer assigned every partition, whose offsets it
commits inside its transactions (group txncheck-wN). Each operation is one transaction of 1-4
micro-ops, `send k v` (v unique in the run) or `poll`; some are aborted on purpose. Every operation is
recorded as invoke, then ok, fail or info (outcome unknown), with monotonic times.

Meanwhile a nemesis, on a schedule drawn from the seed and printed first, kills the broker with
SIGKILL and starts it again on the same ports (kill), stops it with SIGSTOP for longer than the
clients' request timeout (pause), and kills worker processes with SIGKILL in the middle of a
transaction (worker; the next process of that worker re-initialises the same transactional.id, which
fences and aborts what the killed one left open). `timeout`, not on by default, stops the broker for
longer than the transaction timeout. After --seconds everything is stopped, every transactional.id is
re-initialised, and once the last stable offset equals the end on every partition fresh consumers
read every partition from its start.

Then the history is checked (check_* below). Exit 0 with one line of figures when it is clean, 1 with
the anomalies (and the history kept) otherwise, 2 when the run itself could not be made.
--idempotent-only runs the same faults against idempotent producers without transactions and checks
duplicates, lost, unseen and inconsistent offsets (and the consumers' order). --recheck checks the
history a kept run left again.
"""
import argparse
import bisect
import collections
import ctypes
import glob
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

TOPICS = ("txncheck-a", "txncheck-b")
PARTITIONS = 3
KEYS = len(TOPICS) * PARTITIONS

REQUEST_TIMEOUT_MS = 3000  # the broker pauses are longer than this
TRANSACTION_TIMEOUT_MS = 10000
# Seconds a transactional call may take before its outcome is unknown: inside the range of the broker
# pauses' lengths, so that a call caught by one sometimes succeeds late and sometimes ends unknown.
CALL_TIMEOUT = 5.0
ABORT_RATE = 0.15  # transactions aborted on purpose
MAX_MICRO_OPS = 4
POLL_MAX = 200
POLL_WAIT = 0.05
QUIET_END = 4.0  # no fault starts in the last seconds, so the run ends on a working broker

EXIT_CLEAN, EXIT_ANOMALIES, EXIT_BROKEN = 0, 1, 2


class RunError(Exception):
    """The run itself could not be made (a broker that does not start, a worker that crashed)."""


def now():
    # CLOCK_MONOTONIC is one clock for every process of the machine, so the workers' times compare.
    return time.monotonic()


def key_partition(k):
    return TOPICS[k // PARTITIONS], k % PARTITIONS


def key_of(topic, partition):
    return TOPICS.index(topic) * PARTITIONS + partition


def die_with_parent():
    """In a child before exec: SIGKILL it when the checker dies, however the checker ends."""
    ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class HistoryWriter:
    """Appends one JSON record per line; one write(2) per record, so a SIGKILL cuts at most the last."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def write(self, record):
        os.write(self.fd, (json.dumps(record, separators=(",", ":")) + "\n").encode())


# ---------------------------------------------------------------------------------------------------
# Worker side: one process per worker incarnation (`txn_check.py worker ...`).

def client_conf(port, **extra):
    conf = {"bootstrap.servers": "127.0.0.1:%d" % port, "request.timeout.ms": REQUEST_TIMEOUT_MS,
            "retry.backoff.ms": 50, "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500,
            "log_level": 3}
    conf.update(extra)
    return conf


class Session:
    """One producer instance (one producer id and epoch) and the consumer that goes with it.

    A session ends at any error whose outcome is unknown: the next session re-initialises the
    transactional.id, which finishes or aborts whatever the last one left, and resumes its consumer at
    the group's committed offsets (re-initialising after an indefinite error is what clients without
    KIP-890 should do; docs/SEMANTICS.md §12)."""

    def __init__(self, worker, number):
        self.worker = worker
        self.id = "w%d.%d.%d" % (worker.slot, worker.gen, number)
        self.producer = None
        self.consumer = None
        self.positions = {}
        self.fatal = None

    def open(self):
        w = self.worker
        if w.transactional:
            self.producer = Producer(client_conf(
                w.port, **{"transactional.id": w.transactional_id, "transaction.timeout.ms": TRANSACTION_TIMEOUT_MS,
                           "message.timeout.ms": TRANSACTION_TIMEOUT_MS, "linger.ms": 2}))
            self.producer.init_transactions(CALL_TIMEOUT)
        else:
            self.producer = Producer(client_conf(
                w.port, **{"enable.idempotence": True, "acks": "all", "linger.ms": 2,
                           "message.timeout.ms": 15000, "error_cb": self.on_error}))
        self.consumer = Consumer(client_conf(
            w.port, **{"group.id": w.group, "enable.auto.commit": False, "isolation.level": "read_committed",
                       "auto.offset.reset": "earliest", "fetch.wait.max.ms": 50}))
        everything = [TopicPartition(*key_partition(k)) for k in range(KEYS)]
        if w.transactional:
            # After init_transactions, so that the last session's transaction, and its offsets, are settled.
            found = self.consumer.committed(everything, timeout=CALL_TIMEOUT)
            resumed = {key_of(tp.topic, tp.partition): (tp.offset if tp.offset >= 0 else None) for tp in found}
        else:
            # Nothing is committed without transactions: start at the current end.
            resumed = {k: self.consumer.get_watermark_offsets(tp, timeout=CALL_TIMEOUT)[1]
                       for k, tp in enumerate(everything)}
        self.positions = {k: (off if off is not None else 0) for k, off in resumed.items()}
        self.assign(self.positions)
        w.history.write({"type": "resume", "session": self.id, "slot": w.slot, "t": now(),
                         "committed": {str(k): v for k, v in resumed.items()}})

    def on_error(self, err):
        if err.fatal():
            self.fatal = err.str()

    def assign(self, positions):
        self.consumer.assign([TopicPartition(*key_partition(k), off) for k, off in sorted(positions.items())])

    def poll(self):
        """A poll micro-op: what the consumer hands out now, as [time, [[k, offset, value], ...]]."""
        records = []
        for m in self.consumer.consume(num_messages=POLL_MAX, timeout=POLL_WAIT):
            if m.error():
                continue  # transport errors while the broker is down; the consumer retries itself
            k = key_of(m.topic(), m.partition())
            records.append([k, m.offset(), m.value().decode()])
            self.positions[k] = m.offset() + 1
        return [now(), records]

    def offsets(self):
        return [TopicPartition(*key_partition(k), off) for k, off in sorted(self.positions.items())]

    def close(self):
        # Only the handles: a session ends because its broker answers badly, so nothing waits on it.
        if self.consumer is not None:
            try:
                self.consumer.close()
            except (KafkaException, RuntimeError):
                pass
        self.consumer = None
        self.producer = None


class Worker:
    def __init__(self, args):
        self.slot, self.gen, self.port = args.slot, args.gen, args.kafka_port
        self.transactional = not args.idempotent_only
        self.transactional_id = "txncheck-%d" % self.slot
        self.group = "txncheck-w%d" % self.slot
        self.history = HistoryWriter(args.history)
        self.rng = random.Random("%d/%d/%d" % (args.seed, self.slot, self.gen))
        self.values = 0
        self.ops = 0
        self.stopping = False

    def next_value(self):
        self.values += 1
        return "%d.%d.%d" % (self.slot, self.gen, self.values)

    def plan(self):
        mops = []
        for _ in range(self.rng.randint(1, MAX_MICRO_OPS)):
            if self.rng.random() < 0.5:
                mops.append(["send", self.rng.randrange(KEYS), self.next_value()])
            else:
                mops.append(["poll"])
        return mops

    def open_session(self, number):
        """A working session, retried while the broker is down; None once asked to stop."""
        while not self.stopping:
            s = Session(self, number)
            try:
                s.open()
                return s
            except KafkaException as e:
                self.history.write({"type": "session-error", "session": s.id, "t": now(), "error": str(e.args[0])})
                s.close()
                time.sleep(0.2)
        return None

    def run(self):
        signal.signal(signal.SIGTERM, self.on_sigterm)
        number = 0
        while not self.stopping:
            session = self.open_session(number)
            number += 1
            if session is None:
                break
            op = self.transaction if self.transactional else self.idempotent_op
            while not self.stopping and op(session):
                time.sleep(self.rng.uniform(0, 0.01))
            session.close()

    def on_sigterm(self, signo, frame):
        self.stopping = True  # the operation under way finishes first

    def begin_op(self, session, mops, **extra):
        self.ops += 1
        op = "%s:%d" % (session.id, self.ops)
        self.history.write(dict({"type": "invoke", "op": op, "session": session.id, "slot": self.slot, "t": now(),
                                 "mops": mops, "from": {str(k): v for k, v in session.positions.items()}}, **extra))
        return op

    def end_op(self, op, kind, acks, polls, **extra):
        self.history.write(dict({"type": kind, "op": op, "t": now(), "acks": acks, "polls": polls}, **extra))

    @staticmethod
    def micro_ops(session, mops, acks, polls):
        """Sends (their delivery reports land in `acks`: value -> [offset, error]) and polls, in order."""
        def delivered(err, msg):
            acks[msg.value().decode()] = [msg.offset() if err is None else None, None if err is None else err.str()]

        for mop in mops:
            if mop[0] == "send":
                topic, part = key_partition(mop[1])
                session.producer.produce(topic, partition=part, value=mop[2], on_delivery=delivered)
                session.producer.poll(0)
            else:
                polls.append(session.poll())

    def transaction(self, session):
        """One transaction; True while the session can go on."""
        mops = self.plan()
        abort = self.rng.random() < ABORT_RATE
        start = dict(session.positions)
        op = self.begin_op(session, mops, abort=abort)
        acks, polls = {}, []
        p = session.producer
        try:
            p.begin_transaction()
            self.micro_ops(session, mops, acks, polls)
            if polls:
                p.send_offsets_to_transaction(session.offsets(), session.consumer.consumer_group_metadata(),
                                              CALL_TIMEOUT)
            p.flush(CALL_TIMEOUT)  # the delivery reports, with the offsets the sends took
            if abort:
                p.abort_transaction(CALL_TIMEOUT)
                return self.aborted(session, op, start, acks, polls, "aborted on purpose")
            # Written before the commit is asked for: a value read before this time was read precommitted.
            self.history.write({"type": "commit", "op": op, "t": now(), "to": self.positions_sent(session, polls)})
            p.commit_transaction(CALL_TIMEOUT)
            p.poll(0)
            self.end_op(op, "ok", acks, polls, to=self.positions_sent(session, polls))
            return True
        except (KafkaException, BufferError) as e:
            err = e.args[0] if e.args else None
            text = err.str() if isinstance(err, KafkaError) else str(e)
            if isinstance(err, KafkaError) and err.txn_requires_abort():
                try:
                    p.abort_transaction(CALL_TIMEOUT)
                    return self.aborted(session, op, start, acks, polls, text)
                except KafkaException as e2:
                    text += "; abort: " + e2.args[0].str()
            p.poll(0)
            self.end_op(op, "info", acks, polls, error=text)
            return False

    @staticmethod
    def positions_sent(session, polls):
        """The offsets a transaction commits for its group: its consumer's positions, if it polled."""
        return {str(k): v for k, v in session.positions.items()} if polls else None

    def aborted(self, session, op, start, acks, polls, why):
        """The abort was answered: nothing of the transaction counts. Kafka consumers do not rewind on
        abort, so the consumer goes back to where the transaction found it."""
        session.producer.poll(0)
        session.positions = dict(start)
        session.assign(start)
        self.end_op(op, "fail", acks, polls, error=why)
        return True

    def idempotent_op(self, session):
        """Sends and polls without a transaction; a send is ok once acknowledged, info otherwise."""
        mops = self.plan()
        op = self.begin_op(session, mops)
        acks, polls = {}, []
        p = session.producer
        try:
            self.micro_ops(session, mops, acks, polls)
            p.flush(30)  # message.timeout.ms ends every send well before
        except (KafkaException, BufferError) as e:
            self.end_op(op, "info", acks, polls, error=str(e))
            return False
        sends = [m[2] for m in mops if m[0] == "send"]
        settled = all(v in acks and acks[v][0] is not None for v in sends)
        self.end_op(op, "ok" if settled else "info", acks, polls, error=session.fatal)
        return session.fatal is None


def worker_main(argv):
    ap = argparse.ArgumentParser(prog="txn_check.py worker")
    ap.add_argument("--slot", type=int, required=True)
    ap.add_argument("--gen", type=int, required=True)
    ap.add_argument("--kafka-port", type=int, required=True)
    ap.add_argument("--history", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--idempotent-only", action="store_true")
    Worker(ap.parse_args(argv)).run()


# ---------------------------------------------------------------------------------------------------
# The broker and the worker processes, seen from the checker.

class Broker:
    """streamd in `root`, on loopback; after the first start it comes back on the same ports."""

    def __init__(self, binary, streamctl, root, extra=()):
        self.binary, self.streamctl_binary, self.root = binary, streamctl, root
        self.extra = list(extra)  # e.g. the postgres engine's --storage.* flags
        self.ready = os.path.join(root, "ready.json")
        self.log = os.path.join(root, "streamd.log")
        self.ports = None
        self.proc = None

    def argv(self):
        listen, http, kafka = self.ports if self.ports else (0, 0, 0)
        return [self.binary, "--data-dir", os.path.join(self.root, "data"),
                "--listen", "127.0.0.1:%d" % listen, "--http-listen", "127.0.0.1:%d" % http,
                "--kafka.listen", "127.0.0.1:%d" % kafka, "--ready-file", self.ready,
                "--log-level", "info", "--auto-create-streams", "false"] + self.extra

    def start(self):
        # A port given back by the killed broker can be held for a moment by a client's outgoing
        # connection (even one connected to itself), so a start that cannot bind is tried again.
        for _ in range(40):
            if self.try_start():
                return
            time.sleep(0.25)
        raise RunError("streamd did not start; see " + self.log)

    def try_start(self):
        if os.path.exists(self.ready):
            os.remove(self.ready)
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(self.argv(), stdout=log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
        deadline = now() + 60
        while now() < deadline:
            if self.proc.poll() is not None:
                self.proc = None
                return False
            try:
                with open(self.ready) as f:
                    r = json.load(f)
                ports = (r["listen_port"], r["http_port"], r["kafka_port"])
                if self.ports is None:
                    self.ports = ports
                return True
            except (OSError, ValueError, KeyError):
                time.sleep(0.02)
        self.kill9()
        return False

    @property
    def native_port(self):
        return self.ports[0]

    @property
    def kafka_port(self):
        return self.ports[2]

    def kill9(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def pause(self):
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self):
        if self.proc is not None:
            self.proc.send_signal(signal.SIGCONT)  # harmless to a broker that was not stopped

    def stop(self):
        """SIGTERM, and its exit code; SIGKILL if it does not stop in time."""
        if self.proc is None:
            return None
        self.resume()
        self.proc.terminate()
        try:
            code = self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.kill9()
            return None
        self.proc = None
        return code

    def streamctl(self, *args, attempts=30):
        """streamctl --json; retried, since the broker may be starting again."""
        argv = [self.streamctl_binary, "--broker", "127.0.0.1:%d" % self.native_port, "--json", *args]
        for _ in range(attempts):
            p = subprocess.run(argv, capture_output=True, timeout=60)
            if p.returncode == 0:
                return [json.loads(line) for line in p.stdout.decode().splitlines() if line.strip()]
            last = p.stderr.decode().strip()
            time.sleep(0.5)
        raise RunError("%s: %s" % (" ".join(argv), last))


class WorkerSlot:
    """Worker number `slot`: one process at a time, each a new incarnation (gen) of the same
    transactional.id and group."""

    def __init__(self, slot, run):
        self.slot, self.run = slot, run
        self.gen = -1
        self.proc = None

    @property
    def history(self):
        return os.path.join(self.run.root, "history-w%d-g%d.jsonl" % (self.slot, self.gen))

    @property
    def log(self):
        return os.path.join(self.run.root, "worker-w%d-g%d.log" % (self.slot, self.gen))

    def spawn(self):
        self.gen += 1
        argv = [sys.executable, os.path.abspath(__file__), "worker", "--slot", str(self.slot), "--gen",
                str(self.gen), "--kafka-port", str(self.run.broker.kafka_port), "--history", self.history,
                "--seed", str(self.run.seed)] + (["--idempotent-only"] if self.run.idempotent_only else [])
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)

    def last_record(self):
        """The type of the last whole record the current incarnation wrote."""
        try:
            with open(self.history, "rb") as f:
                f.seek(max(0, os.fstat(f.fileno()).st_size - 65536))
                lines = f.read().split(b"\n")
        except OSError:
            return None
        for line in reversed(lines[:-1]):
            try:
                return json.loads(line)["type"]
            except ValueError:
                continue
        return None

    def kill9(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def check_alive(self):
        if self.proc is not None and self.proc.poll() is not None:
            raise RunError("worker %d (gen %d) exited %d; see %s" % (self.slot, self.gen, self.proc.returncode,
                                                                    self.log))


# ---------------------------------------------------------------------------------------------------
# The nemesis: a schedule drawn from the seed, then applied.

def plan_nemesis(rng, seconds, kinds, workers):
    """Faults one after another, each kind in turn in a shuffled order, none in the last seconds."""
    events, order = [], []
    t = rng.uniform(2.0, 4.0)
    while True:
        if not order:
            order = list(kinds)
            rng.shuffle(order)
        kind = order.pop()
        ev = {"at": round(t, 2), "f": kind}
        if kind == "kill":
            ev["down"] = round(rng.uniform(0.1, 1.5), 2)
            length = ev["down"] + 1.0
        elif kind == "pause":
            ev["for"] = round(REQUEST_TIMEOUT_MS / 1000 + rng.uniform(0.5, 2.5), 2)
            length = ev["for"]
        elif kind == "timeout":
            # Past the transaction timeout: once it runs again the broker aborts, and fences, the
            # transactions it finds open, while their producers' requests come in.
            ev["for"] = round(TRANSACTION_TIMEOUT_MS / 1000 + rng.uniform(1.0, 3.0), 2)
            length = ev["for"]
        else:
            ev["slot"] = rng.randrange(workers)
            ev["delay"] = round(rng.uniform(0, 0.05), 3)
            length = 0.5
        if t + length > seconds - QUIET_END:
            return events
        events.append(ev)
        t += length + rng.uniform(2.0, 6.0)


def describe_fault(ev, transactional=True):
    if ev["f"] == "kill":
        return "%6.2fs kill -9 the broker, start it %.2fs later" % (ev["at"], ev["down"])
    if ev["f"] == "pause":
        return "%6.2fs SIGSTOP the broker for %.2fs" % (ev["at"], ev["for"])
    if ev["f"] == "timeout":
        return "%6.2fs SIGSTOP the broker for %.2fs, past the transaction timeout" % (ev["at"], ev["for"])
    return "%6.2fs SIGKILL worker %d mid-%s (+%.3fs)" % (ev["at"], ev["slot"], "transaction" if transactional else
                                                        "operation", ev["delay"])


class Run:
    """One run: the broker, the worker slots, the nemesis's record, and the end state they leave."""

    def __init__(self, args, root):
        self.args, self.root = args, root
        self.seed = args.seed
        self.idempotent_only = args.idempotent_only
        self.broker = Broker(args.streamd, args.streamctl, root, args.broker_arg)
        self.slots = [WorkerSlot(i, self) for i in range(args.workers)]
        self.events = HistoryWriter(os.path.join(root, "history-nemesis.jsonl"))
        self.events.write({"type": "meta", "t": now(), "seed": args.seed, "transactional": not args.idempotent_only,
                           "workers": args.workers, "seconds": args.seconds})

    def sleep_until(self, t):
        while now() < t:
            for s in self.slots:
                s.check_alive()
            time.sleep(min(0.1, max(0.0, t - now())))

    def apply(self, ev):
        self.events.write(dict(ev, type="nemesis", t=now()))
        if ev["f"] == "kill":
            self.broker.kill9()
            time.sleep(ev["down"])
            self.broker.start()
        elif ev["f"] in ("pause", "timeout"):
            self.broker.pause()
            time.sleep(ev["for"])
            self.broker.resume()
        else:
            self.kill_worker(self.slots[ev["slot"]], ev["delay"])
        self.events.write({"type": "nemesis-done", "f": ev["f"], "t": now()})

    def kill_worker(self, slot, delay):
        """SIGKILL inside a transaction: `delay` after the worker's last record became an invoke (or a
        commit); if that transaction ended meanwhile, at the start of the next one. Then a new
        incarnation of the worker."""
        inside = ("invoke", "commit")
        deadline = now() + 3
        while now() < deadline and slot.last_record() not in inside:
            time.sleep(0.002)
        time.sleep(delay)
        while now() < deadline and slot.last_record() not in inside:
            time.sleep(0.002)
        state = slot.last_record()
        slot.kill9()
        self.events.write({"type": "worker-killed", "slot": slot.slot, "gen": slot.gen, "t": now(), "in": state})
        slot.spawn()

    def workload(self, schedule):
        start = now()
        for s in self.slots:
            s.spawn()
        for ev in schedule:
            self.sleep_until(start + ev["at"])
            self.apply(ev)
        self.sleep_until(start + self.args.seconds)

    def stop_workers(self):
        for s in self.slots:
            if s.proc is not None:
                s.proc.terminate()
        deadline = now() + 3 * CALL_TIMEOUT
        for s in self.slots:
            if s.proc is None:
                continue
            try:
                code = s.proc.wait(max(0.1, deadline - now()))
                s.proc = None
                # -SIGTERM: stopped before it could install its handler, while starting.
                if code not in (0, -signal.SIGTERM):
                    raise RunError("worker %d (gen %d) exited %d when stopped" % (s.slot, s.gen, code))
            except subprocess.TimeoutExpired:
                s.kill9()
                self.events.write({"type": "worker-killed", "slot": s.slot, "gen": s.gen, "t": now(), "in": "stop"})

    def end_open_transactions(self):
        """init_transactions of every transactional.id aborts what a killed worker left open."""
        for s in self.slots:
            p = Producer(client_conf(self.broker.kafka_port, **{"transactional.id": "txncheck-%d" % s.slot,
                                                                 "transaction.timeout.ms": TRANSACTION_TIMEOUT_MS}))
            for attempt in range(6):
                try:
                    p.init_transactions(CALL_TIMEOUT)
                    break
                except KafkaException as e:
                    if attempt == 5:
                        raise RunError("init_transactions of txncheck-%d: %s" % (s.slot, e.args[0]))
            del p

    def bounds(self):
        """{k: (last_stable, next)} from streamctl bounds."""
        out = {}
        for ti, topic in enumerate(TOPICS):
            for b in self.broker.streamctl("bounds", topic)[0]:
                out[ti * PARTITIONS + b["partition"]] = (b["last_stable"], b["next"])
        return out

    def wait_stable(self, timeout=60):
        deadline = now() + timeout
        while True:
            b = self.bounds()
            if all(ls == nx for ls, nx in b.values()):
                return b
            if now() > deadline:
                return b
            time.sleep(0.25)

    def drain(self, bounds):
        """Every committed record of every partition, from a fresh read_committed consumer each."""
        final = {}
        for k in range(KEYS):
            c = Consumer(client_conf(self.broker.kafka_port, **{
                "group.id": "txncheck-drain", "enable.auto.commit": False, "isolation.level": "read_committed",
                "enable.partition.eof": True}))
            c.assign([TopicPartition(*key_partition(k), 0)])
            records, eof_at = [], None
            deadline = now() + 60
            while eof_at is None:
                if now() > deadline:
                    raise RunError("drain of key %d: no end within 60 s" % k)
                for m in c.consume(num_messages=1000, timeout=1):
                    if m.error():
                        if m.error().code() == KafkaError._PARTITION_EOF:
                            eof_at = m.offset()
                        continue
                    records.append([m.offset(), m.value().decode()])
                    deadline = now() + 60
            c.close()
            final[k] = {"records": records, "eof": eof_at, "next": bounds[k][1], "last_stable": bounds[k][0]}
        return final

    def committed_offsets(self):
        """Each worker group's committed offsets: {slot: {k: offset or None}}."""
        out = {}
        for s in self.slots:
            c = Consumer(client_conf(self.broker.kafka_port, **{"group.id": "txncheck-w%d" % s.slot,
                                                                "enable.auto.commit": False}))
            found = c.committed([TopicPartition(*key_partition(k)) for k in range(KEYS)], timeout=30)
            out[s.slot] = {key_of(tp.topic, tp.partition): (tp.offset if tp.offset >= 0 else None) for tp in found}
            c.close()
        return out

    def finish(self):
        """Stops the workload and reads the end state: the drain, the groups' offsets."""
        self.stop_workers()
        self.broker.resume()
        if self.broker.proc is None:
            self.broker.start()
        if not self.idempotent_only:
            self.end_open_transactions()
        bounds = self.wait_stable()
        end = {"type": "final", "t": now(), "drain": self.drain(bounds)}
        if not self.idempotent_only:
            end["committed"] = {str(slot): {str(k): v for k, v in offs.items()}
                                for slot, offs in self.committed_offsets().items()}
        end["broker_exit"] = self.broker.stop()
        self.events.write(end)

    def cleanup(self):
        for s in self.slots:
            s.kill9()
        self.broker.resume()
        self.broker.kill9()


# ---------------------------------------------------------------------------------------------------
# The history as the checks see it.

class Op:
    """One operation: what it meant to do, what it did, and how it ended."""

    def __init__(self, rec):
        self.id, self.session, self.slot = rec["op"], rec["session"], rec["slot"]
        self.invoked = rec["t"]
        self.mops = rec["mops"]
        self.start = {int(k): v for k, v in rec["from"].items()}
        self.type = "info"  # until a completion says otherwise: the worker was killed
        self.commit_t = None
        self.ended = None
        self.acks = {}
        self.polls = []
        self.to = None
        self.error = "worker killed"

    def complete(self, rec):
        self.type, self.ended = rec["type"], rec["t"]
        self.acks = rec.get("acks", {})
        self.polls = rec.get("polls", [])
        if rec.get("to"):
            self.to = {int(k): v for k, v in rec["to"].items()}
        self.error = rec.get("error")

    def sends(self):
        return [(m[1], m[2]) for m in self.mops if m[0] == "send"]

    def ack_offset(self, v):
        a = self.acks.get(v)
        return a[0] if a else None

    def may_have_committed(self):
        """ok, or info after the commit was asked for; a transaction never asked to commit cannot have."""
        return self.type == "ok" or (self.type == "info" and self.commit_t is not None)


class History:
    def __init__(self, root):
        self.transactional = True
        self.ops = {}
        self.resumes = []  # (t, slot, session, committed)
        self.nemesis = []
        self.final = None
        self.records = []
        for path in sorted(glob.glob(os.path.join(root, "history-*.jsonl"))):
            with open(path) as f:
                for line in f:
                    try:
                        self.records.append(json.loads(line))
                    except ValueError:
                        pass  # the last line of a worker killed while writing it
        self.records.sort(key=lambda r: r["t"])
        self.t0 = self.records[0]["t"] if self.records else 0.0
        for r in self.records:
            self.take(r)
        if self.final is None:
            raise RunError("the history has no final state")
        self.drain = {int(k): d for k, d in self.final["drain"].items()}
        self.writer = {}  # value -> (op, key)
        self.by_slot = collections.defaultdict(list)  # slot -> its ops in the order they began
        for op in sorted(self.ops.values(), key=lambda op: op.invoked):
            self.by_slot[op.slot].append(op)
            for k, v in op.sends():
                self.writer[v] = (op, k)

    def take(self, r):
        t = r["type"]
        if t == "invoke":
            self.ops[r["op"]] = Op(r)
        elif t == "commit":
            op = self.ops[r["op"]]
            op.commit_t = r["t"]
            op.to = {int(k): v for k, v in r["to"].items()} if r.get("to") else None
        elif t in ("ok", "fail", "info"):
            self.ops[r["op"]].complete(r)
        elif t == "resume":
            self.resumes.append((r["t"], r["slot"], r["session"], {int(k): v for k, v in r["committed"].items()}))
        elif t == "final":
            self.final = r
        elif t == "meta":
            self.transactional = r["transactional"]
        elif t.startswith("nemesis") or t == "worker-killed":
            self.nemesis.append(r)

    def reads(self):
        """Every record the workers polled: (op, time, k, offset, value)."""
        for op in self.ops.values():
            for t, recs in op.polls:
                for k, o, v in recs:
                    yield op, t, k, o, v

    def drained(self):
        """Every record of the final read: (k, offset, value)."""
        for k, d in self.drain.items():
            for o, v in d["records"]:
                yield k, o, v

    def ops_of(self, slot):
        return self.by_slot[slot]

    def acknowledged(self):
        """Sends the history says are durable: (op, k, v, offset or None). Transactional: every send of
        an ok transaction; idempotent: every acknowledged send."""
        for op in self.ops.values():
            for k, v in op.sends():
                off = op.ack_offset(v)
                if self.transactional and op.type == "ok":
                    yield op, k, v, off
                elif not self.transactional and off is not None:
                    yield op, k, v, off


# ---------------------------------------------------------------------------------------------------
# The checks. Each returns a list of anomalies, each a dict with "what" and the "ops" it involves.

def anomaly(what, *ops):
    return {"what": what, "ops": [op.id for op in ops if op is not None]}


def check_offsets(h):
    """inconsistent offsets: one offset, two values (or a value nobody sent); duplicates: one value at
    two offsets. Both over every acknowledgement (aborted ones too: an aborted record keeps its offset)
    and every read."""
    at = collections.defaultdict(set)  # (k, offset) -> values
    where = collections.defaultdict(set)  # value -> (k, offset)
    for op in h.ops.values():
        for k, v in op.sends():
            off = op.ack_offset(v)
            if off is not None:
                at[(k, off)].add(v)
                where[v].add((k, off))
    for _, _, k, o, v in h.reads():
        at[(k, o)].add(v)
        where[v].add((k, o))
    for k, o, v in h.drained():
        at[(k, o)].add(v)
        where[v].add((k, o))
    def writer(v):
        return h.writer.get(v, (None,))[0]

    inconsistent = [anomaly("key %d offset %d holds %s" % (k, o, sorted(vs)), *map(writer, vs))
                    for (k, o), vs in sorted(at.items()) if len(vs) > 1]
    duplicates = [anomaly("value %s at %s" % (v, sorted(places)), writer(v))
                  for v, places in sorted(where.items()) if len(places) > 1]
    unknown = [anomaly("value %s read at key %d offset %d was never sent" % (v, k, o))
               for (k, o), vs in sorted(at.items()) for v in vs if v not in h.writer]
    return inconsistent + unknown, duplicates


def check_lost_unseen(h):
    """lost: an acknowledged send below the highest offset read on its partition that no read saw, or
    one the workers read that the final read no longer holds; unseen: acknowledged, never read."""
    seen = set(v for _, _, _, _, v in h.reads())
    final = set(v for _, _, v in h.drained())
    highest = collections.defaultdict(lambda: -1)
    for _, _, k, o, _ in h.reads():
        highest[k] = max(highest[k], o)
    for k, o, _ in h.drained():
        highest[k] = max(highest[k], o)
    lost, unseen = [], []
    for op, k, v, off in h.acknowledged():
        if v in final:
            continue
        if v in seen:
            lost.append(anomaly("%s (key %d offset %s) was read during the run and is gone from the final read"
                                % (v, k, off), op))
        elif off is not None and off < highest[k]:
            lost.append(anomaly("%s acknowledged at key %d offset %d, below offset %d read there, never read"
                                % (v, k, off, highest[k]), op))
        else:
            unseen.append(anomaly("%s acknowledged at key %d offset %s (%s), never read" % (v, k, off, op.type), op))
    return lost, unseen


def absorbed_by(h, writer, v, k, o):
    """The transaction of the same producer instance that a late send of `writer` (value v, found at key
    k, offset o) was taken into, if the record is where docs/SEMANTICS.md §12's hazard puts it: never
    acknowledged to `writer` (its answer was lost), after everything `writer` was acknowledged on k,
    and before the first record a later transaction of the same session, which may have committed,
    wrote there. Kafka clients without KIP-890 allow this."""
    if writer.ack_offset(v) is not None:
        return None  # accepted while its transaction was open: the abort should have covered it
    if any(a[0] is not None and a[0] > o for w, a in writer.acks.items() if h.writer[w][1] == k):
        return None
    for op in h.ops_of(writer.slot):
        if op.session != writer.session or op.invoked <= writer.invoked or not op.may_have_committed():
            continue
        mine = [op.ack_offset(v) for kk, v in op.sends() if kk == k and op.ack_offset(v) is not None]
        if mine and min(mine) > o:
            return op
    return None


def check_uncommitted_reads(h):
    """aborted read: a value of a transaction that failed, or never asked to commit, was read (by a
    worker or the final read); precommitted read: a value read before its transaction asked to commit.
    An aborted read that has the shape of the delayed-Produce hazard of clients without KIP-890
    (docs/SEMANTICS.md §12) is counted apart, as late-produce: still an anomaly, but a known one."""
    aborted, late, precommitted = [], [], []
    reads = [(op, t, k, o, v) for op, t, k, o, v in h.reads()] + [(None, None, k, o, v) for k, o, v in h.drained()]
    for reader, t, k, o, v in reads:
        if v not in h.writer:
            continue
        writer, _ = h.writer[v]
        who = reader.id if reader else "the final read"
        if not writer.may_have_committed():
            what = "%s read %s at key %d offset %d, from %s %s (%s)" % (who, v, k, o, writer.type, writer.id,
                                                                      writer.error)
            host = absorbed_by(h, writer, v, k, o)
            if host is None:
                aborted.append(anomaly(what, writer, reader))
            else:
                late.append(anomaly(what + "; inside %s %s of the same producer" % (host.type, host.id),
                                    writer, host, reader))
        elif reader is not None and t < writer.commit_t:
            precommitted.append(anomaly("%s read %s at %.3fs, %.3fs before %s asked to commit" % (
                who, v, t - h.t0, writer.commit_t - t, writer.id), writer, reader))
    return aborted, late, precommitted


def check_torn(h):
    """torn transaction: one that committed or may have (ok, or info past its commit) and is partly in
    the final read."""
    final = set(v for _, _, v in h.drained())
    torn = []
    for op in h.ops.values():
        sends = [v for _, v in op.sends()]
        if not sends or not op.may_have_committed():
            continue
        visible = [v for v in sends if v in final]
        if 0 < len(visible) < len(sends):
            torn.append(anomaly("%s %s: %d of its %d sends in the final read; missing %s" % (
                op.type, op.id, len(visible), len(sends), sorted(set(sends) - set(visible))), op))
    return torn


def committed_candidates(h, slot, before, final_read):
    """What group txncheck-w<slot> may hold at time `before`: [(how, offsets, op)]. The offsets of its
    last transaction known to have committed offsets (an ok one, or an info one whose sends are all in
    the final read), or nothing before the first; and those of every info transaction since that
    asked to commit offsets, since it may have committed."""
    found = [("nothing committed", {k: None for k in range(KEYS)}, None)]
    for op in h.ops_of(slot):
        if op.invoked >= before:
            break
        if op.to is None or op.commit_t is None:
            continue
        sends = [v for _, v in op.sends()]
        if op.type == "ok" or (op.type == "info" and sends and all(v in final_read for v in sends)):
            found = [(op.type, op.to, op)]
        elif op.type == "info":
            found.append(("info", op.to, op))
    return found


def check_committed_offsets(h):
    """Each group's committed offsets, when a worker resumes and at the end, are the end of its last
    committed poll (what its last ok transaction sent), or those of an info transaction after it; an
    info transaction whose offsets the group holds must have committed its sends too."""
    if not h.transactional:
        return []
    final_read = set(v for _, _, v in h.drained())
    points = [(t, slot, "session %s resumed" % session, committed) for t, slot, session, committed in h.resumes]
    points += [(float("inf"), int(slot), "the end", {int(k): v for k, v in offs.items()})
               for slot, offs in h.final["committed"].items()]
    bad = []
    for t, slot, when, committed in points:
        candidates = committed_candidates(h, slot, t, final_read)
        match = [c for c in candidates if c[1] == committed]
        if not match:
            bad.append(anomaly("group txncheck-w%d at %s: offsets %s; expected %s" % (
                slot, when, committed, " or ".join("%s %s %s" % (how, op.id if op else "", offs)
                                                   for how, offs, op in candidates)),
                *(op for _, _, op in candidates)))
        elif all(how == "info" for how, _, _ in match):
            whole = [op for _, _, op in match if all(v in final_read for _, v in op.sends())]
            if not whole:
                op = match[0][2]
                bad.append(anomaly("group txncheck-w%d at %s holds the offsets of info %s, whose sends are not all in "
                                   "the final read" % (slot, when, op.id), op))
    return bad


def check_poll_order(h):
    """poll-skip: a consumer handed out a record past a committed one it never handed out; nonmonotonic:
    a record at or before one it handed out already. Each consumer's polls start where its transaction
    found it (the previous ok transaction's end, or where an aborted one was rewound to), so across
    operations and within one the same walk applies; `int-` marks the kind found within an operation."""
    committed = {k: sorted(o for o, _ in d["records"]) for k, d in h.drain.items()}
    skips, nonmonotonic = [], []
    for op in h.ops.values():
        cursor = dict(op.start)
        first = set(range(KEYS))
        for _, recs in op.polls:
            for k, o, v in recs:
                where = "int-" if k not in first else ""
                first.discard(k)
                expect = cursor.get(k, 0)
                if o < expect:
                    nonmonotonic.append(anomaly("%s%s: key %d offset %d after position %d (%s)" % (
                        where, op.id, k, o, expect, v), op))
                else:
                    offs = committed[k]
                    i = bisect.bisect_left(offs, expect)
                    if i < len(offs) and offs[i] < o:
                        skipped = offs[i:bisect.bisect_left(offs, o)]
                        skips.append(anomaly("%s%s: key %d read offset %d from position %d, skipping committed %s" % (
                            where, op.id, k, o, expect, skipped[:5]), op))
                cursor[k] = o + 1
    return skips, nonmonotonic


def tarjan(graph):
    """Strongly connected components of {node: [node...]} with more than one node; iterative."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in list(graph):
        if root in index:
            continue
        work = [(root, iter(graph.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(graph.get(nxt, ()))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    n = stack.pop()
                    on_stack.discard(n)
                    comp.append(n)
                    if n == node:
                        break
                if len(comp) > 1:
                    out.append(comp)
    return out


def find_cycle(graph, component):
    """One cycle through the component's first transaction, as a node list (BFS inside the component)."""
    members = set(component)
    start = next(n for n in component if isinstance(n, str))
    parent = {start: None}
    queue = collections.deque([start])
    while queue:
        n = queue.popleft()
        for m in graph.get(n, ()):
            if m == start:
                path = []
                while n is not None:
                    path.append(n)
                    n = parent[n]
                return list(reversed(path)) + [start]
            if m in members and m not in parent:
                parent[m] = n
                queue.append(m)
    return component


def describe_cycle(cycle):
    """The transactions of a cycle, with the partitions (aux nodes (k, i)) that link them."""
    parts = []
    for n in cycle:
        if isinstance(n, str):
            parts.append(n)
        elif not parts or not parts[-1].startswith("[key"):
            parts.append("[key %d]" % n[0])
    return " -> ".join(parts)


def check_cycles(h):
    """G1c: a cycle of transactions over wr and ww edges that Kafka's guarantees forbid.

    A wr edge T1 -> T2 (T2 read what T1 wrote) orders T1's commit before T2's. A ww edge T1 -> T2 (T1
    wrote a partition at a lower offset than T2) does not order their commits in Kafka, which does not
    isolate writes between transactions: T2 may commit first and only its records wait behind T1's. What
    it does order is T1's commit before any read of T2's record, since a read_committed read stops at
    the first offset of the earliest open transaction. So ww enters the graph as a chain per partition
    of its committed offsets: writer -> offset, offset -> next offset, offset -> every reader of it.
    Any cycle there is an anomaly. For comparison the literal wr U ww graph is counted too: its cycles
    of ww edges alone are G0, and its cycles with a wr edge are the interleavings Kafka allows; both are
    reported and allowed."""
    if not h.transactional:
        return [], {}
    graph = collections.defaultdict(list)
    at = {}  # (k, offset) -> aux node (k, i)
    for k, d in h.drain.items():
        for i, (o, v) in enumerate(d["records"]):
            at[(k, o)] = (k, i)
            writer = h.writer.get(v, (None,))[0]
            if writer is not None:
                graph[writer.id].append((k, i))
            if i + 1 < len(d["records"]):
                graph[(k, i)].append((k, i + 1))
    for reader, _, k, o, _ in h.reads():
        if (k, o) in at:
            graph[at[(k, o)]].append(reader.id)
    g1c = []
    for comp in tarjan(graph):
        cycle = find_cycle(graph, comp)
        g1c.append(anomaly("cycle " + describe_cycle(cycle), *(h.ops[n] for n in cycle if isinstance(n, str))))
    return g1c, literal_cycles(h)


def literal_cycles(h):
    """Jepsen's graph as is: wr edges and ww edges between consecutive committed writes of a partition.
    How many of its strongly connected components hold a cycle of ww edges alone (G0), and how many
    hold a wr edge (cycles of the interleavings Kafka allows, Jepsen's G1c with ww edges)."""
    ww = collections.defaultdict(set)
    wr = collections.defaultdict(set)
    for k, d in h.drain.items():
        prev = None
        for o, v in d["records"]:
            w = h.writer.get(v, (None,))[0]
            if w is not None and prev is not None and prev is not w:
                ww[prev.id].add(w.id)
            prev = w or prev
    for reader, _, k, o, v in h.reads():
        w = h.writer.get(v, (None,))[0]
        if w is not None and w is not reader:
            wr[w.id].add(reader.id)
    both = {n: list(ww.get(n, ())) + list(wr.get(n, ())) for n in set(ww) | set(wr)}
    with_wr = [comp for comp in map(set, tarjan(both)) if any(wr.get(n, set()) & comp for n in comp)]
    return {"G0": len(tarjan({n: list(s) for n, s in ww.items()})), "wr+ww": len(with_wr)}


# ---------------------------------------------------------------------------------------------------
# The verdict.

def check_history(h):
    """Every check: {name: [anomalies]}, and the allowed figures."""
    inconsistent, duplicates = check_offsets(h)
    lost, unseen = check_lost_unseen(h)
    out = collections.OrderedDict()
    out["inconsistent"] = inconsistent
    out["duplicate"] = duplicates
    out["lost"] = lost
    out["unseen"] = unseen
    if h.transactional:
        aborted, late, precommitted = check_uncommitted_reads(h)
        out["aborted-read"] = aborted
        out["late-produce"] = late
        out["precommitted-read"] = precommitted
        out["torn"] = check_torn(h)
        out["committed-offsets"] = check_committed_offsets(h)
    skips, nonmonotonic = check_poll_order(h)
    out["poll-skip"] = skips
    out["nonmonotonic-poll"] = nonmonotonic
    g1c, allowed = check_cycles(h)
    if h.transactional:
        out["G1c"] = g1c
    out["lso-stuck"] = [anomaly("key %d: last stable offset %d below the end %d after every transaction ended"
                                % (k, d["last_stable"], d["next"])) for k, d in sorted(h.drain.items())
                        if d["last_stable"] != d["next"]]
    out["drain-end"] = [anomaly("key %d: the final read ended at %s, the partition at %d" % (k, d["eof"], d["next"]))
                        for k, d in sorted(h.drain.items()) if d["eof"] != d["next"]]
    if h.final.get("broker_exit") not in (0, None):
        out["broker-exit"] = [anomaly("streamd exited %s on SIGTERM" % h.final["broker_exit"])]
    return out, allowed


def figures(h, results, allowed):
    types = collections.Counter(op.type for op in h.ops.values())
    sends = sum(len(op.sends()) for op in h.ops.values())
    polls = sum(len(op.polls) for op in h.ops.values())
    polled = sum(1 for _ in h.reads())
    killed = sum(1 for r in h.nemesis if r["type"] == "worker-killed" and r["in"] in ("invoke", "commit"))
    faults = collections.Counter(r["f"] for r in h.nemesis if r["type"] == "nemesis")
    kind = "ops" if not h.transactional else "txns"
    parts = ["%s ok=%d failed=%d info=%d" % (kind, types["ok"], types["fail"], types["info"]),
             "sends=%d acked=%d" % (sends, sum(1 for _ in h.acknowledged())),
             "polls=%d records-polled=%d" % (polls, polled),
             "final-records=%d" % sum(len(d["records"]) for d in h.drain.values()),
             "sessions=%d" % len(set(op.session for op in h.ops.values())),
             "faults=%d (kill=%d pause=%d worker=%d timeout=%d, %d mid-op)" % (
                 sum(faults.values()), faults["kill"], faults["pause"], faults["worker"], faults["timeout"], killed)]
    parts.append(" ".join("%s=%d" % (name, len(found)) for name, found in results.items()))
    if allowed:
        parts.append("allowed: G0=%d wr+ww-cycles=%d" % (allowed["G0"], allowed["wr+ww"]))
    return " ".join(parts)


def print_anomalies(h, results, history_path):
    for name, found in results.items():
        if not found:
            continue
        print("%s: %d" % (name, len(found)))
        for a in found[:5]:
            print("  " + a["what"])
    involved = set(op for found in results.values() for a in found[:3] for op in a["ops"])
    if involved:
        print("history excerpt (%s):" % history_path)
        for r in h.records:
            if r.get("op") in involved:
                print("  " + json.dumps(r)[:400])


def write_history(h, path):
    with open(path, "w") as f:
        for r in h.records:
            f.write(json.dumps(r, separators=(",", ":")) + "\n")


# ---------------------------------------------------------------------------------------------------

def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--streamd", help="the streamd binary to run")
    ap.add_argument("--streamctl", help="the streamctl binary to run")
    ap.add_argument("--seconds", type=float, default=60, help="how long the workload runs (default 60)")
    ap.add_argument("--workers", type=int, default=4, help="worker processes (default 4)")
    ap.add_argument("--seed", type=int, default=None, help="replay the schedule of this seed")
    ap.add_argument("--nemesis", default="kill,pause,worker",
                    help="faults among kill (broker SIGKILL), pause (broker SIGSTOP past the request timeout), "
                         "worker (worker SIGKILL) and timeout (broker SIGSTOP past the transaction timeout)")
    ap.add_argument("--idempotent-only", action="store_true", help="idempotent producers, no transactions")
    ap.add_argument("--broker-arg", action="append", default=[], metavar="ARG",
                    help="one more argument for streamd, repeated as needed (e.g. the postgres engine's flags)")
    ap.add_argument("--dir", default=None, help="run in this directory (default: a new one under $TMPDIR)")
    ap.add_argument("--keep", action="store_true", help="keep the run's directory even when it passes")
    ap.add_argument("--recheck", metavar="DIR", help="only check the history a kept run left in DIR")
    args = ap.parse_args(argv)
    if not args.recheck and not (args.streamd and args.streamctl):
        ap.error("--streamd and --streamctl are needed to run")
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1, 2 ** 31)
    kinds = [k for k in args.nemesis.split(",") if k]
    if any(k not in ("kill", "pause", "worker", "timeout") for k in kinds):
        ap.error("--nemesis takes kill, pause, worker and timeout")
    args.kinds = kinds
    return args


def verdict(root, title, keep):
    """Checks the history in `root`, prints the figures (and the anomalies); the exit code."""
    h = History(root)
    results, allowed = check_history(h)
    history_path = os.path.join(root, "history.jsonl")
    line = "%s: %s" % (title, figures(h, results, allowed))
    if any(results.values()):
        write_history(h, history_path)
        print_anomalies(h, results, history_path)
        print(line)
        return EXIT_ANOMALIES
    print(line)
    if keep:
        write_history(h, history_path)
    return EXIT_CLEAN


def main(argv):
    args = parse_args(argv)
    if args.recheck:
        return verdict(args.recheck, "txn_check: recheck of %s" % args.recheck, True)
    mode = "idempotent-only" if args.idempotent_only else "transactions"
    root = args.dir or tempfile.mkdtemp(prefix="txncheck-")
    os.makedirs(root, exist_ok=True)
    schedule = plan_nemesis(random.Random(args.seed), args.seconds, args.kinds, args.workers) if args.kinds else []
    print("txn_check: seed %d, %s, %d workers, %gs, %d faults, in %s" % (
        args.seed, mode, args.workers, args.seconds, len(schedule), root))
    for ev in schedule:
        print("  " + describe_fault(ev, not args.idempotent_only))
    sys.stdout.flush()
    run = Run(args, root)
    started = now()
    # A SIGTERM (a test runner's timeout) unwinds through the finally below, which stops every process.
    signal.signal(signal.SIGTERM, lambda signo, frame: sys.exit(EXIT_BROKEN))
    try:
        run.broker.start()
        for topic in TOPICS:
            run.broker.streamctl("create", topic, "--partitions", str(PARTITIONS))
        run.workload(schedule)
        run.finish()
    except (RunError, KafkaException, OSError, subprocess.SubprocessError) as e:
        print("txn_check: the run failed: %s (kept %s)" % (e, root))
        return EXIT_BROKEN
    finally:
        run.cleanup()
    title = "txn_check: seed %d %s %.0fs" % (args.seed, mode, now() - started)
    code = verdict(root, title, args.keep)
    if code != EXIT_CLEAN:
        print("txn_check: FAILED; replay with --seed %d; history and logs kept in %s" % (args.seed, root))
    elif not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return code


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        worker_main(sys.argv[2:])
    else:
        sys.exit(main(sys.argv[1:]))
