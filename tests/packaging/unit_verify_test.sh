#!/usr/bin/env bash
# `systemd-analyze verify` on deploy/streamd.service, and its offline security exposure kept under a
# threshold (2.0, systemd counts it in tenths) so that hardening cannot silently erode.
#
# usage: unit_verify_test.sh SOURCE_DIR [STREAMD]
# verify checks that ExecStart's binary exists; /usr/bin/streamd exists only where the package is
# installed, so elsewhere a copy of the unit points ExecStart at the built binary (or a stand-in) and
# nothing else changes. Any output from verify fails the test: unknown or misspelt directives are
# only warnings there. Exits 77 (ctest SKIP) without systemd-analyze.
set -euo pipefail
source="$1" streamd="${2:-}"
unit="$source/deploy/streamd.service"
command -v systemd-analyze >/dev/null || { echo "SKIP: systemd-analyze is not installed"; exit 77; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
checked="$unit"
if [ ! -x /usr/bin/streamd ]; then
  if [ -z "$streamd" ] || [ ! -x "$streamd" ]; then
    streamd="$work/streamd"
    printf '#!/bin/sh\nexit 0\n' >"$streamd"
    chmod +x "$streamd"
  fi
  checked="$work/streamd.service"
  sed "s#^ExecStart=/usr/bin/streamd #ExecStart=$streamd #" "$unit" >"$checked"
  cmp -s "$unit" "$checked" && { echo "FAIL: ExecStart is not /usr/bin/streamd" >&2; exit 1; }
fi

out="$(systemd-analyze verify "$checked" 2>&1)" || { echo "$out"; echo "FAIL: verify" >&2; exit 1; }
[ -z "$out" ] || { echo "$out"; echo "FAIL: verify printed warnings" >&2; exit 1; }
echo "verify: clean"

if systemd-analyze security --help 2>/dev/null | grep -q -- --offline; then
  systemd-analyze security --offline=yes --threshold=20 "$checked" >"$work/security" 2>&1 ||
    { cat "$work/security"; echo "FAIL: exposure above 2.0" >&2; exit 1; }
  grep 'Overall exposure' "$work/security"
fi
echo PASS
