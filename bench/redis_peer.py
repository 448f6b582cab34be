#!/usr/bin/env python3
"""Redis Streams figures for bench/run-all's peer column, over a raw RESP connection (no client
library is needed): `catchup` reads a stream with XRANGE COUNT 1000 from start to end, `e2e` XADDs at
a fixed rate while another connection waits in XREAD BLOCK and measures append-to-delivery latency.
Prints one JSON object like `streamctl bench --json`. Every loop is bounded. (run-all takes W3 from
redis-benchmark, as the issue's figure was measured; `catchup` is the end-to-end reading check.)
"""
import json
import socket
import sys
import threading
import time


class Resp:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def send(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.sock.sendall(b"".join(out))

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("redis closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("redis closed the connection")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def read(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind in (b"+", b":"):
            return rest
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise RuntimeError("unexpected reply %r" % line)

    def call(self, *args):
        self.send(*args)
        return self.read()


def percentile(values, p):
    if not values:
        return 0.0
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100.0 * len(values)))]


def catchup(port, key):
    r = Resp(port)
    start, records, payload_bytes, latencies = "-", 0, 0, []
    t0 = time.perf_counter()
    while True:
        t = time.perf_counter()
        entries = r.call("XRANGE", key, start, "+", "COUNT", 1000)
        latencies.append((time.perf_counter() - t) * 1000)
        if not entries:
            break
        for entry_id, fields in entries:
            records += 1
            payload_bytes += sum(len(f) for f in fields[1::2])
        start = b"(" + entries[-1][0]
    return records, payload_bytes, time.perf_counter() - t0, latencies


def e2e(port, key, rate, duration_s, size):
    total = int(rate * duration_s)
    latencies = []
    reader = Resp(port)
    last = reader.call("XADD", key, "*", "p", "start")
    done = threading.Event()

    def read():
        cursor = last
        while len(latencies) < total and not done.is_set():
            reply = reader.call("XREAD", "BLOCK", 1000, "STREAMS", key, cursor)
            now = time.perf_counter()
            if not reply:
                continue
            for entry_id, fields in reply[0][1]:
                cursor = entry_id
                latencies.append((now - float(fields[1][:20])) * 1000)

    thread = threading.Thread(target=read)
    thread.start()
    writer = Resp(port)
    padding = b"x" * max(0, size - 20)
    epoch = time.perf_counter()
    for i in range(total):
        delay = epoch + i / rate - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        writer.call("XADD", key, "*", "p", b"%20.6f" % time.perf_counter() + padding)
    deadline = time.perf_counter() + 5
    while len(latencies) < total and time.perf_counter() < deadline:
        time.sleep(0.01)
    done.set()
    thread.join()
    return len(latencies), len(latencies) * size, time.perf_counter() - epoch, latencies


def main():
    mode, port, key = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if mode == "catchup":
        records, nbytes, seconds, lat = catchup(port, key)
    else:
        records, nbytes, seconds, lat = e2e(port, key, float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6]))
    print(json.dumps({
        "mode": mode, "records": records, "seconds": round(seconds, 3),
        "records_per_s": round(records / seconds) if seconds else 0,
        "mb_per_s": round(nbytes / seconds / 1e6, 2) if seconds else 0,
        "p50_ms": round(percentile(lat, 50), 3), "p99_ms": round(percentile(lat, 99), 3),
        "p99_9_ms": round(percentile(lat, 99.9), 3),
    }))


if __name__ == "__main__":
    main()
