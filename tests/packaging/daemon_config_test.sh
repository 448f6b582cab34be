#!/usr/bin/env bash
# The real streamd binary against the shipped configuration: `streamd --help` lists every key that
# docs/CONFIG.md documents (flag and key name), and the daemon starts on each sample config — only the
# data directory and the ports are overridden by flags — becomes ready, and exits 0 on SIGTERM.
#
# usage: daemon_config_test.sh SOURCE_DIR STREAMD
# Exits 77 (ctest SKIP) when streamd is not built.
set -euo pipefail
source="$1" streamd="${2:-}"
[ -n "$streamd" ] && [ -x "$streamd" ] || { echo "SKIP: streamd is not built"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }

work="$(mktemp -d)"
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill -KILL "$pid" 2>/dev/null || true; fi
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

n=0
for config in config/streamd.yaml deploy/streamd.yaml; do
  n=$((n + 1))
  ready="$work/ready-$n"
  "$streamd" --config "$source/$config" --data-dir "$work/data-$n" --listen 127.0.0.1:0 \
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
echo PASS
