#!/usr/bin/env python3
"""The disk's own figures, for bench/run-all: what streamd can at best approach on this machine.

Prints one JSON object: 4 KiB appends to a growing file, each followed by fdatasync, per second with
their p50/p99 latency (the cost of one synced append done naively), and the bandwidth of 1 MiB writes
each followed by fdatasync into a zero-filled file (what a log writer that preallocates can hope for
with large records). bench/storage_bench measures the same two figures the same way. For context it
also measures the 1 MiB writes into a growing file, as a log appends to new space: each sync then
also commits the new blocks' allocation to the journal, which a zero-filled file had paid for before
the timing began. Which pages the page cache gets for the new data moves that figure by two to four
times on a virtual machine whose balloon device reports free pages to the host: a page the host took
back costs a fault in the host when it is touched again (docs/PERFORMANCE.md §"Large appends"). The
growing file is written three times, each deleted before the next, and the best pass is the figure,
as run-all measures W5. Every loop is bounded by count and by time.
"""
import json
import os
import sys
import time


def percentile(sorted_values, p):
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, int(p / 100.0 * len(sorted_values)))]


def synced_writes(path, block, count, budget_s, prefill):
    data = os.urandom(block)
    latencies = []
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        if prefill:
            zeros = bytes(block)
            for _ in range(count):
                os.write(fd, zeros)
            os.fsync(fd)
            os.lseek(fd, 0, os.SEEK_SET)
        start = time.perf_counter()
        for _ in range(count):
            t0 = time.perf_counter()
            os.write(fd, data)
            os.fdatasync(fd)
            latencies.append(time.perf_counter() - t0)
            if time.perf_counter() - start > budget_s:
                break
        elapsed = time.perf_counter() - start
    finally:
        os.close(fd)
        os.unlink(path)
    return len(latencies), elapsed, sorted(latencies)


def main():
    directory = sys.argv[1] if len(sys.argv) > 1 else "."
    n, elapsed, lat = synced_writes(os.path.join(directory, "raw-4k"), 4096, 20000, 10.0, False)
    m, seq_elapsed, _ = synced_writes(os.path.join(directory, "raw-1m"), 1 << 20, 512, 15.0, True)
    growing = []
    for _ in range(3):
        g, grow_elapsed, _ = synced_writes(os.path.join(directory, "raw-1m-grow"), 1 << 20, 512, 15.0, False)
        growing.append(round(g * (1 << 20) / grow_elapsed / 1e6, 1))
    print(json.dumps({
        "fdatasync_per_s": round(n / elapsed),
        "fdatasync_p50_ms": round(percentile(lat, 50) * 1000, 3),
        "fdatasync_p99_ms": round(percentile(lat, 99) * 1000, 3),
        "synced_seq_mb_per_s": round(m * (1 << 20) / seq_elapsed / 1e6, 1),
        "synced_growing_mb_per_s": max(growing),
        "synced_growing_passes_mb_per_s": growing,
    }))


if __name__ == "__main__":
    main()
