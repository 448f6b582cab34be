#!/usr/bin/env python3
"""CPU time of chosen processes, from /proc, for bench/pg-cost.

    proc_cpu.py snapshot [--postmaster PID ...] [--process PID ...]

prints one JSON object {"postgres": seconds, "brokers": seconds, "ticks_per_s": n} with the CPU time
(user + system) those processes have used so far; two snapshots around a workload give what it cost.

A PostgreSQL server is many processes: the postmaster forks a backend per connection and its
auxiliary processes (checkpointer, WAL writer, ...). A child that exited and was reaped has its time
added to the postmaster's cutime/cstime, so the postmaster's own four fields plus every live child's
utime/stime count every process the server ran, whether it is still alive or not. A broker is one
process with threads: its utime/stime already sums them. Nothing else on the machine is counted.
"""
import json
import os
import sys


def stat_fields(pid):
    """(ppid, utime, stime, cutime, cstime) of `pid`, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            raw = f.read()
    except OSError:
        return None
    # The command name is in parentheses and may hold spaces: fields start after the last ')'.
    rest = raw[raw.rindex(")") + 2:].split()
    return int(rest[1]), int(rest[11]), int(rest[12]), int(rest[13]), int(rest[14])


def children_of(parents):
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        fields = stat_fields(int(name))
        if fields and fields[0] in parents:
            out.append(int(name))
    return out


def snapshot(postmasters, processes):
    ticks = os.sysconf("SC_CLK_TCK")
    pg = 0
    for pid in postmasters:
        fields = stat_fields(pid)
        if fields:
            pg += sum(fields[1:5])
    for pid in children_of(set(postmasters)):
        fields = stat_fields(pid)
        if fields:
            pg += fields[1] + fields[2]
    brokers = 0
    for pid in processes:
        fields = stat_fields(pid)
        if fields:
            brokers += fields[1] + fields[2]
    return {"postgres": pg / ticks, "brokers": brokers / ticks, "ticks_per_s": ticks}


def main(argv):
    if len(argv) < 2 or argv[1] != "snapshot":
        print(__doc__, file=sys.stderr)
        return 64
    postmasters, processes, target = [], [], None
    for arg in argv[2:]:
        if arg == "--postmaster":
            target = postmasters
        elif arg == "--process":
            target = processes
        elif target is not None:
            target.append(int(arg))
        else:
            print(f"proc_cpu.py: unexpected {arg}", file=sys.stderr)
            return 64
    print(json.dumps(snapshot(postmasters, processes)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
