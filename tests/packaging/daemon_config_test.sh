#!/usr/bin/env bash
# The real streamd binary against the shipped configuration: `streamd --help` lists every key that
# docs/CONFIG.md documents (flag and key name), and the daemon starts on each sample config — only the
# data directory and the ports are overridden by flags — becomes ready, and exits 0 on SIGTERM. Under
# the production config it runs as systemd runs it (deploy/streamd.service: Type=notify, WatchdogSec):
# a stand-in notify socket must receive WATCHDOG=1, READY=1 and, on SIGTERM, STOPPING=1.
#
# usage: daemon_config_test.sh SOURCE_DIR STREAMD
# Exits 77 (ctest SKIP) when streamd is not built.
set -euo pipefail
source="$1" streamd="${2:-}"
[ -n "$streamd" ] && [ -x "$streamd" ] || { echo "SKIP: streamd is not built"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }

work="$(mktemp -d)"
pid=""
receiver=""
cleanup() {
  if [ -n "$pid" ]; then kill -KILL "$pid" 2>/dev/null || true; fi
  if [ -n "$receiver" ]; then kill -TERM "$receiver" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

help="$("$streamd" --help)"
rows="$(sed -n 's/^| `\([a-z_.]*\)` | `\(--[a-z.-]*\)` |.*/\1 \2/p' "$source/docs/CONFIG.md")"
[ -n "$rows" ] || fail "no key table found in docs/CONFIG.md"
while read -r key flag; do
  grep -qF -- "$flag " <<<"$help" || fail "streamd --help lacks $flag (docs/CONFIG.md key $key)"
  grep -qF -- "config key $key," <<<"$help" || fail "streamd --help does not name config key $key"
done <<<"$rows"
echo "--help lists all $(wc -l <<<"$rows") documented keys"

# systemd's end of the notify socket: records every datagram, one per line, until STOPPING=1.
notify_socket="$work/notify.sock"
notes="$work/notifications"
python3 - "$notify_socket" "$notes" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(60)
with open(sys.argv[2], "w") as out:
    while True:
        datagram = s.recv(4096).decode()
        out.write(datagram.replace("\n", " ") + "\n")
        out.flush()
        if datagram == "STOPPING=1":
            break
PY
receiver=$!
for _ in $(seq 100); do [ -S "$notify_socket" ] && break; sleep 0.1; done
[ -S "$notify_socket" ] || fail "the stand-in notify socket did not appear"

n=0
for config in config/streamd.yaml deploy/streamd.yaml; do
  n=$((n + 1))
  ready="$work/ready-$n"
  notify=()
  if [ "$config" = deploy/streamd.yaml ]; then
    # A 200 ms watchdog: pings every 100 ms, so even a short run sends some.
    notify=(env NOTIFY_SOCKET="$notify_socket" WATCHDOG_USEC=200000)
  fi
  "${notify[@]}" "$streamd" --config "$source/$config" --data-dir "$work/data-$n" --listen 127.0.0.1:0 \
    --http-listen 127.0.0.1:0 --ready-file "$ready" >"$work/log-$n" 2>&1 &
  pid=$!
  for _ in $(seq 200); do  # up to 20 s
    [ -s "$ready" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  [ -s "$ready" ] || { cat "$work/log-$n"; fail "streamd did not become ready on $config"; }
  kill -TERM "$pid"
  status=0
  for _ in $(seq 200); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then cat "$work/log-$n"; fail "streamd did not stop within 20 s of SIGTERM"; fi
  wait "$pid" || status=$?
  pid=""
  [ "$status" -eq 0 ] || { cat "$work/log-$n"; fail "streamd exited $status on SIGTERM with $config"; }
  echo "$config: ready ($(cat "$ready")), stopped cleanly"
done

for _ in $(seq 100); do kill -0 "$receiver" 2>/dev/null || break; sleep 0.1; done
receiver=""
first_of() { grep -nx "$1" "$notes" | head -1 | cut -d: -f1; }
ready_at="$(first_of READY=1)" stopping_at="$(first_of STOPPING=1)" watchdog_at="$(first_of WATCHDOG=1)"
[ -n "$ready_at" ] || { cat "$notes"; fail "no READY=1 on the notify socket"; }
[ -n "$stopping_at" ] || { cat "$notes"; fail "no STOPPING=1 on the notify socket after SIGTERM"; }
[ -n "$watchdog_at" ] || { cat "$notes"; fail "no WATCHDOG=1 on the notify socket"; }
[ "$ready_at" -lt "$stopping_at" ] || { cat "$notes"; fail "STOPPING=1 came before READY=1"; }
echo "notify socket: READY=1, STOPPING=1 and $(grep -cx WATCHDOG=1 "$notes") WATCHDOG=1"
echo PASS
