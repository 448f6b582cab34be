#!/usr/bin/env python3
"""W7 for bench/run-all: W1 while many idle connections are open, and what each one costs the broker.

    bench/many_connections.py STREAMD STREAMCTL [--connections 10000] [--rounds 3]

Starts its own streamd on 127.0.0.1 (port 0) in a temporary directory, with limits.max_connections
just above the connections it opens, and stops it by pid at the end. Then:

1. samples the broker's VmRSS (/proc/PID/status) before any connection;
2. opens the connections, each completing Hello (docs/PROTOCOL.md) so that it is a real session, and
   samples VmRSS again once every one is answered: (after - before) / connections is the memory per
   idle connection;
3. runs W1 (`streamctl bench produce`, 1 producer, 1 partition, batches of 1000 x 100 B, as run-all
   runs it) `rounds` times with the connections held, checks that none of them was closed, and
   closes them;
4. runs W1 `rounds` times alone, on the same broker.

Prints one JSON object. Everything is bounded: the connections must all be open within a time limit,
and each W1 run is bounded by its record count and streamctl's --timeout. The caller's
RLIMIT_NOFILE is raised to its hard limit, which must leave room for the connections; the broker
raises its own (server/open_file_limit.cc).
"""
import argparse
import errno
import json
import os
import resource
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import time

# Request {id: 1, hello: HelloRequest {protocol_version: 1}}, framed: a 4-byte big-endian length, then
# the body (field 1 varint 1; field 10, length-delimited, holding field 1 varint 1).
HELLO_BODY = bytes([0x08, 0x01, 0x52, 0x02, 0x08, 0x01])
HELLO_FRAME = len(HELLO_BODY).to_bytes(4, "big") + HELLO_BODY
RESPONSE_ERROR_FIELD = 2
RESPONSE_HELLO_FIELD = 10
# Connects in progress at once: few enough that the listener's accept backlog never overflows (a
# dropped SYN costs a second's retransmission), enough to open 10,000 in a few seconds.
MAX_PENDING = 256


def fail(message):
    sys.exit(f"many_connections: {message}")


def vm_rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    fail(f"no VmRSS for pid {pid}")


def varint(data, i):
    value, shift = 0, 0
    while True:
        if i >= len(data):
            raise ValueError("truncated varint")
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7


def top_level_fields(body):
    """The field numbers of a serialized message's top level."""
    fields, i = set(), 0
    while i < len(body):
        tag, i = varint(body, i)
        number, wire = tag >> 3, tag & 7
        fields.add(number)
        if wire == 0:
            _, i = varint(body, i)
        elif wire == 2:
            length, i = varint(body, i)
            i += length
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            raise ValueError(f"wire type {wire}")
    return fields


def open_sessions(port, count, budget_s):
    """`count` connections that each completed Hello; fails on any refusal or error."""
    sel = selectors.DefaultSelector()
    sessions, started = [], 0
    received = {}  # socket -> bytes of its answer so far
    deadline = time.monotonic() + budget_s
    while len(sessions) < count:
        if time.monotonic() > deadline:
            fail(f"only {len(sessions)} of {count} connections completed Hello within {budget_s} s")
        while started < count and len(received) < MAX_PENDING:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            err = s.connect_ex(("127.0.0.1", port))
            if err not in (0, errno.EINPROGRESS):
                fail(f"connect: {os.strerror(err)} after {started} connections")
            received[s] = b""
            sel.register(s, selectors.EVENT_WRITE)
            started += 1
        for key, events in sel.select(timeout=1.0):
            s = key.fileobj
            if events & selectors.EVENT_WRITE:
                err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if err:
                    fail(f"connect: {os.strerror(err)} after {len(sessions)} sessions")
                s.send(HELLO_FRAME)  # ten bytes into an empty send buffer: taken whole
                sel.modify(s, selectors.EVENT_READ)
                continue
            chunk = s.recv(4096)
            if not chunk:
                fail(f"the broker closed a connection before answering Hello, after {len(sessions)} sessions")
            data = received[s] + chunk
            received[s] = data
            if len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
                continue
            fields = top_level_fields(data[4:4 + int.from_bytes(data[:4], "big")])
            if RESPONSE_ERROR_FIELD in fields or RESPONSE_HELLO_FIELD not in fields:
                fail(f"Hello was refused after {len(sessions)} sessions (limits.max_connections?)")
            sel.unregister(s)
            del received[s]
            sessions.append(s)
    sel.close()
    return sessions


def still_open(sessions):
    """How many of the sessions the broker has not closed (a closed one reads EOF at once)."""
    n = 0
    for s in sessions:
        try:
            if s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT):
                n += 1  # unexpected bytes, but the connection is open
        except BlockingIOError:
            n += 1
        except OSError:
            pass
    return n


def raise_nofile(needed):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < needed:
        fail(f"RLIMIT_NOFILE hard limit {hard} is below the {needed} descriptors needed; raise it (ulimit -Hn)")
    if soft != resource.RLIM_INFINITY and soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def start_broker(streamd, work, max_connections):
    os.mkdir(os.path.join(work, "data"), 0o700)
    ready = os.path.join(work, "ready")
    log = open(os.path.join(work, "streamd.log"), "w")
    proc = subprocess.Popen(
        [streamd, "--data-dir", os.path.join(work, "data"), "--listen", "127.0.0.1:0",
         "--http-listen", "127.0.0.1:0", "--ready-file", ready, "--log-level", "warn",
         "--retention-check-period", "0", "--limits.max-connections", str(max_connections)],
        stdout=log, stderr=subprocess.STDOUT)
    for _ in range(200):
        if os.path.exists(ready) and os.path.getsize(ready) > 0:
            return proc, json.load(open(ready))["listen_port"]
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    fail("streamd did not start:\n" + open(os.path.join(work, "streamd.log")).read())


def w1(streamctl, port, stream):
    out = subprocess.run(
        [streamctl, "--broker", f"127.0.0.1:{port}", "--timeout", "60s", "--json", "bench", "produce",
         "--stream", stream, "--records", "3000000", "--record-size", "100", "--batch", "1000",
         "--partitions", "1", "--in-flight", "32", "--no-idempotence"],
        capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        fail(f"streamctl bench produce failed: {out.stderr.strip()}")
    return json.loads(out.stdout)


def median_run(runs):
    """The run of median throughput (the lower middle one of an even count), latencies and all."""
    return sorted(runs, key=lambda r: r["records_per_s"])[(len(runs) - 1) // 2]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("streamd")
    p.add_argument("streamctl")
    p.add_argument("--connections", type=int, default=10000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--open-budget-s", type=float, default=120.0)
    args = p.parse_args()
    raise_nofile(args.connections + 256)

    work = tempfile.mkdtemp(prefix="streamd-w7.")
    proc = None
    try:
        proc, port = start_broker(args.streamd, work, args.connections + 64)
        time.sleep(0.5)  # start-up's allocations settle
        rss_before = vm_rss_kib(proc.pid)
        began = time.monotonic()
        sessions = open_sessions(port, args.connections, args.open_budget_s)
        open_s = time.monotonic() - began
        time.sleep(1.0)
        rss_open = vm_rss_kib(proc.pid)
        loaded = [w1(args.streamctl, port, f"w7-loaded-{i}") for i in range(args.rounds)]
        rss_after_w1 = vm_rss_kib(proc.pid)
        open_after = still_open(sessions)
        for s in sessions:
            s.close()
        del sessions
        time.sleep(1.0)
        rss_closed = vm_rss_kib(proc.pid)
        alone = [w1(args.streamctl, port, f"w7-alone-{i}") for i in range(args.rounds)]
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(work, ignore_errors=True)

    print(json.dumps({
        "connections": args.connections,
        "open_s": round(open_s, 2),
        "still_open_after_w1": open_after,
        "rss_before_kib": rss_before,
        "rss_open_kib": rss_open,
        "rss_after_w1_kib": rss_after_w1,
        "rss_closed_kib": rss_closed,
        "kib_per_connection": round((rss_open - rss_before) / args.connections, 2),
        "w1_loaded_records_per_s": [r["records_per_s"] for r in loaded],
        "w1_alone_records_per_s": [r["records_per_s"] for r in alone],
        "w1_loaded": median_run(loaded),
        "w1_alone": median_run(alone),
        "ratio": round(median_run(loaded)["records_per_s"] / median_run(alone)["records_per_s"], 3),
    }))


if __name__ == "__main__":
    main()
