"""Helpers shared by the Kafka client scenarios: assertions that say what differed, streamctl, kcat."""
import json
import os
import subprocess
import sys
import time


def check(cond, what):
    if not cond:
        print("FAILED: " + what, file=sys.stderr)
        sys.exit(1)


def equal(got, want, what):
    check(got == want, "%s: got %r, want %r" % (what, got, want))


def run(argv, stdin=None, timeout=60):
    p = subprocess.run(argv, input=stdin, capture_output=True, timeout=timeout)
    if p.returncode != 0:
        print("command %r exited %d\nstdout: %s\nstderr: %s" % (argv, p.returncode, p.stdout, p.stderr),
              file=sys.stderr)
        sys.exit(1)
    return p.stdout


def streamctl(native_port, *args, stdin=None):
    """streamctl --json against the broker's native listener; one parsed JSON value per line."""
    out = run([os.environ["STREAMCTL"], "--broker", "127.0.0.1:%d" % native_port, "--json", *args], stdin=stdin)
    return [json.loads(line) for line in out.decode().splitlines() if line.strip()]


def kcat(port, *args, stdin=None, timeout=60):
    return run(["kcat", "-b", "127.0.0.1:%d" % port, *args], stdin=stdin, timeout=timeout)


def wait_until(cond, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.1)
    check(False, "timed out waiting for " + what)
