#!/usr/bin/env bash
# Builds the container image from the Dockerfile with podman and runs it as a user would, then
# checks: the image's metadata (user 10001:10001, ports, volume, HEALTHCHECK); the broker runs as
# 10001; it refuses a data volume writable by others (exit 78); it serves the protocol and /healthz
# on the published loopback addresses; the image's HEALTHCHECK command exits 0; a record appended
# before a stop is read back after a restart on the same volume; SIGTERM stops it with exit 0.
#
# usage: container_test.sh SOURCE_DIR STREAMCTL
#
# The base: `FROM debian:12` is used as found in podman's storage; where there is none (no image
# registry is reachable), one is made with `debootstrap --variant=minbase bookworm` from the mirror
# apt uses and `podman import`ed as localhost/debian:12, and kept for the next run.
#
# Running: `podman run` with the ports published on 127.0.0.1 where it works, as it comes or with the
# rlimits or runtime a sandboxed host accepts (see "how to run it" below); where it does not work at
# all, the image's filesystem is mounted with `podman image mount` and its entrypoint and command run
# under `chroot --userspec=USER` in new mount, network and PID namespaces: streamd is PID 1 on its own
# loopback as in a container, and the checks reach it from inside its network namespace (nothing is
# published then).
#
# Environment:
#   STREAMD_CONTAINER_KEEP=1      keep the image built (localhost/streamd-test:PID) at the end
#   STREAMD_CONTAINER_IMAGE=X     check image X (built before, kept) instead of building one
#   STREAMD_CONTAINER_RUN=podman|chroot   force a way of running (default: podman where it works)
#   STREAMD_CONTAINER_RUNTIME=X   `podman --runtime X` (e.g. runc), the only runtime tried
#   STREAMD_CONTAINER_RUN_OPTS="..."      `podman run` options (e.g. --ulimit nproc=4096:4096), the only ones tried
#   STREAMD_DEBIAN_MIRROR=URL     the mirror debootstrap uses (default: apt's bookworm/main source)
#
# Needs root (podman builds with --isolation=chroot, debootstrap, the chroot fallback), podman,
# debootstrap where no debian:12 is present, and a Debian mirror; `scripts/setup` installs the
# tools. Exits 77 (ctest SKIP) naming what is missing. The image build compiles streamd, taking both
# cores for minutes: ctest runs it alone (RUN_SERIAL) so that no timed test shares the CPU with it.
# shellcheck disable=SC2016  # single quotes keep Go templates and inner scripts unexpanded
set -euo pipefail
source="$1" streamctl="${2:-}"

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || skip "not root (podman build --isolation=chroot, debootstrap and chroot need it)"
{ [ -n "$streamctl" ] && [ -x "$streamctl" ]; } || skip "streamctl is not built"
for tool in podman curl; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (scripts/setup installs it)"
done

work="$(mktemp -d /tmp/streamd-container-test.XXXXXX)"
given="${STREAMD_CONTAINER_IMAGE:-}"
image="${given:-localhost/streamd-test:$$}"
podman_global=()
# shellcheck disable=SC2206  # a list of options by design
run_opts=(${STREAMD_CONTAINER_RUN_OPTS:-})
[ -n "${STREAMD_CONTAINER_RUNTIME:-}" ] && podman_global=(--runtime "$STREAMD_CONTAINER_RUNTIME")
built="" mounted="" volume="" containers=() unshare_pid="" streamd_pid=""

cleanup() {
  set +e
  if [ -n "$streamd_pid" ]; then kill -KILL "$streamd_pid" 2>/dev/null; fi
  if [ -n "$unshare_pid" ]; then kill -KILL "$unshare_pid" 2>/dev/null; wait "$unshare_pid" 2>/dev/null; fi
  for c in "${containers[@]}"; do podman "${podman_global[@]}" rm -f -t 0 "$c" >/dev/null 2>&1; done
  [ -n "$volume" ] && podman volume rm -f "$volume" >/dev/null 2>&1
  [ -n "$mounted" ] && podman image unmount "$image" >/dev/null 2>&1
  if [ -n "$built" ]; then
    if [ "${STREAMD_CONTAINER_KEEP:-0}" = 1 ]; then
      echo "kept image $image (podman rmi $image removes it)"
    else
      podman rmi -f "$image" >/dev/null 2>&1
    fi
  fi
  rm -rf "$work"
}
trap cleanup EXIT

now() { date +%s; }
t0="$(now)"

# --- the debian:12 base ---------------------------------------------------------------------------
base_made=0
if [ -z "$given" ] && ! podman image exists debian:12; then
  command -v debootstrap >/dev/null || skip "no debian:12 image and debootstrap is not installed"
  # Two runs at once make one base.
  exec 9>/tmp/streamd-container-base.lock
  flock 9
  if ! podman image exists debian:12; then
    mirror="${STREAMD_DEBIAN_MIRROR:-$(apt-cache policy 2>/dev/null | awk '$3 == "bookworm/main" {print $2; exit}')}"
    [ -n "$mirror" ] || skip "no debian:12 image, and apt has no bookworm/main source for debootstrap (set STREAMD_DEBIAN_MIRROR)"
    echo "making debian:12 with debootstrap from $mirror"
    debootstrap --variant=minbase bookworm "$work/base" "$mirror" >"$work/debootstrap.log" 2>&1 ||
      { tail -20 "$work/debootstrap.log"; fail "debootstrap from $mirror failed"; }
    # As the published image: no downloaded packages or package lists, `bash` as the command.
    rm -rf "$work"/base/var/cache/apt/archives/*.deb "$work"/base/var/lib/apt/lists/*
    tar -C "$work/base" -c . | podman import --change 'CMD ["bash"]' - localhost/debian:12 >/dev/null ||
      fail "podman import of the debootstrap tree failed"
    rm -rf "$work/base"
    base_made=1
  fi
  flock -u 9
fi
[ -n "$given" ] || echo "base: $(podman image inspect --format '{{.RepoTags}} {{.Id}}' debian:12 | cut -c1-80)"
t_base="$(now)"

# --- the image --------------------------------------------------------------------------------------
# --format docker: the OCI format has no HEALTHCHECK, and podman would drop it.
if [ -n "$given" ]; then
  podman image exists "$image" || fail "STREAMD_CONTAINER_IMAGE: no image $image"
else
  built=1
  podman build --isolation=chroot --network=host --format docker --layers=false -t "$image" "$source" \
    >"$work/build.log" 2>&1 || { tail -40 "$work/build.log"; fail "podman build failed"; }
fi
t_build="$(now)"
echo "${given:+given}${built:+built} $image ($(podman image inspect --format '{{.Size}}' "$image") bytes)"

inspect() { podman image inspect --format "$1" "$image"; }
lines() { inspect "{{range $1}}{{.}}{{\"\\n\"}}{{end}}"; }
user="$(inspect '{{.Config.User}}')"
[ "$user" = 10001:10001 ] || fail "the image runs as '$user', not 10001:10001"
ports="$(inspect '{{range $p, $_ := .Config.ExposedPorts}}{{$p}} {{end}}')"
for p in 7411/tcp 7412/tcp; do grep -qw "$p" <<<"$ports" || fail "the image does not expose $p ($ports)"; done
inspect '{{range $v, $_ := .Config.Volumes}}{{$v}}{{"\n"}}{{end}}' | grep -qx /var/lib/streamd ||
  fail "/var/lib/streamd is not a volume of the image"
mapfile -t health < <(lines .HealthCheck.Test)
[ "${#health[@]}" -ge 2 ] || fail "the image has no HEALTHCHECK"
case "${health[0]}" in
  CMD) health_cmd=("${health[@]:1}") ;;
  CMD-SHELL) health_cmd=(/bin/sh -c "${health[1]}") ;;
  *) fail "unexpected HEALTHCHECK form ${health[*]}" ;;
esac
echo "image: user $user, ports $ports, volume /var/lib/streamd, HEALTHCHECK ${health_cmd[*]}"

# --- how to run it ----------------------------------------------------------------------------------
# `podman run` as it comes first. Then two ways around what a sandboxed host refuses: podman's defaults
# for root raise RLIMIT_NOFILE and RLIMIT_NPROC past what podman itself holds, which takes
# CAP_SYS_RESOURCE, so the limits are set no higher than that (the open files this shell may have,
# 4096 processes: the broker needs a few dozen threads); and crun refuses a host that mounts the
# cgroup v1 controllers beside a cgroup v2 hierarchy that has controllers, where runc runs.
try_run() {
  podman "${podman_global[@]}" run --rm "${run_opts[@]}" "$image" --version >"$work/probe.log" 2>&1 &&
    grep -q '^streamd ' "$work/probe.log"
}
mode="${STREAMD_CONTAINER_RUN:-}"
if [ -z "$mode" ]; then
  attempts=("" "--ulimit nofile=$(ulimit -Hn):$(ulimit -Hn) --ulimit nproc=4096:4096")
  runtimes=("")
  command -v runc >/dev/null && runtimes+=(runc)
  # Options or a runtime given by the caller are the only ones tried.
  [ -n "${STREAMD_CONTAINER_RUN_OPTS:-}" ] && attempts=("$STREAMD_CONTAINER_RUN_OPTS")
  [ -n "${STREAMD_CONTAINER_RUNTIME:-}" ] && runtimes=("$STREAMD_CONTAINER_RUNTIME")
  for runtime in "${runtimes[@]}"; do
    for attempt in "${attempts[@]}"; do
      podman_global=()
      [ -n "$runtime" ] && podman_global=(--runtime "$runtime")
      # shellcheck disable=SC2206  # a list of options by design
      run_opts=($attempt)
      if try_run; then mode=podman; break 2; fi
      printf '%s ' podman "${podman_global[@]}" run "${run_opts[@]}"
      echo "-> $(grep -v '^time=' "$work/probe.log" | tail -1)"
    done
  done
  if [ -z "$mode" ]; then
    mode=chroot
    echo "podman run does not work here, so the image's filesystem runs under chroot instead"
  fi
fi
[ "$mode" = podman ] || [ "$mode" = chroot ] || fail "STREAMD_CONTAINER_RUN must be podman or chroot"
if [ "$mode" = podman ]; then echo "running with" podman "${podman_global[@]}" run "${run_opts[@]}"; else echo "running with chroot"; fi

if [ "$mode" = chroot ]; then
  for tool in unshare nsenter ip chroot; do
    command -v "$tool" >/dev/null || skip "podman run does not work here, and the fallback needs $tool"
  done
  mounted="$(podman image mount "$image")"
  mapfile -t entry < <(lines .Config.Entrypoint)
  mapfile -t cmd < <(lines .Config.Cmd)
  mapfile -t env < <(lines .Config.Env)
  workdir="$(inspect '{{.Config.WorkingDir}}')"
fi

proto="" http="" log=""
# The container's process: $streamd_pid on the host, its output in $log, its addresses in
# $proto/$http (as the host reaches them). VOLUME is a host directory, or in podman a named volume.
start() {
  local vol="$1" n="$2"
  log="$work/streamd-$n.log"
  if [ "$mode" = podman ]; then
    local cid
    cid="$(podman "${podman_global[@]}" run -d "${run_opts[@]}" -p 127.0.0.1::7411 -p 127.0.0.1::7412 \
      -v "$vol:/var/lib/streamd" "$image" 2>"$work/run-$n.err")" ||
      { cat "$work/run-$n.err"; fail "podman run failed"; }
    containers+=("$cid")
    streamd_pid="$(podman inspect --format '{{.State.Pid}}' "$cid")"
    # (A container that has already exited, as on a refused volume, has no ports.)
    proto="$(podman port "$cid" 7411/tcp 2>/dev/null || true)" http="$(podman port "$cid" 7412/tcp 2>/dev/null || true)"
    if podman port "$cid" 2>/dev/null | grep -v -- '-> 127\.0\.0\.1:'; then fail "a port is published beyond loopback"; fi
  else
    # unshare forks: its child is PID 1 of the new PID namespace, and becomes streamd by exec.
    unshare --mount --net --pid --fork --kill-child -- /bin/sh -c '
      vol="$1" root="$2" user="$3"; shift 3
      ip link set lo up && mount --bind "$vol" "$root/var/lib/streamd" && mount -t proc proc "$root/proc" &&
      exec chroot --userspec="$user" "$root" /usr/bin/env -i "$@"' \
      sh "$vol" "$mounted" "$user" "${env[@]}" /bin/sh -c 'cd "$0" && exec "$@"' \
      "$workdir" "${entry[@]}" "${cmd[@]}" >"$log" 2>&1 &
    unshare_pid=$!
    streamd_pid=""
    # streamd's host PID: unshare's child (found by its parent PID, the fourth field of stat).
    local stat line fields
    for _ in $(seq 100); do
      for stat in /proc/[0-9]*/stat; do
        line="$(cat "$stat" 2>/dev/null)" || continue
        read -r -a fields <<<"${line##*) }"
        if [ "${fields[1]}" = "$unshare_pid" ]; then streamd_pid="${stat//[^0-9]/}"; break; fi
      done
      [ -n "$streamd_pid" ] && break
      kill -0 "$unshare_pid" 2>/dev/null || break  # it may exit at once (a refused volume)
      sleep 0.1
    done
    proto=127.0.0.1:7411 http=127.0.0.1:7412
  fi
}
# A command as the host runs it against the container's addresses.
outside() {
  if [ "$mode" = podman ]; then "$@"; else nsenter --net="/proc/$streamd_pid/ns/net" -- "$@"; fi
}
show_log() {
  if [ "$mode" = podman ]; then podman logs "${containers[-1]}" 2>&1 | tail -30; else tail -30 "$log"; fi
}
running() {
  if [ "$mode" = podman ]; then
    [ "$(podman inspect --format '{{.State.Running}}' "${containers[-1]}")" = true ]
  else
    kill -0 "$unshare_pid" 2>/dev/null
  fi
}
# Waits up to SECONDS for the container to end and sets $code to its exit code; fails if it runs on.
code=""
ended() {
  local seconds="$1"
  for _ in $(seq $((seconds * 10))); do running || break; sleep 0.1; done
  running && return 1
  if [ "$mode" = podman ]; then
    code="$(podman inspect --format '{{.State.ExitCode}}' "${containers[-1]}")"
  else
    code=0
    wait "$unshare_pid" || code=$?
    unshare_pid=""
  fi
  streamd_pid=""
}
wait_ready() {
  local deadline=$((SECONDS + 60))
  while [ "$SECONDS" -lt "$deadline" ]; do
    [ "$(outside curl -s --max-time 2 -o /dev/null -w '%{http_code}' "http://$http/readyz")" = 200 ] && return 0
    running || { show_log; fail "streamd exited before it was ready"; }
    sleep 0.1
  done
  show_log
  fail "streamd was not ready within 60 s"
}
healthcheck() {
  if [ "$mode" = podman ]; then
    podman "${podman_global[@]}" healthcheck run "${containers[-1]}" 2>/dev/null
  else
    nsenter --target "$streamd_pid" --net --mount --root --wd --setuid "${user%%:*}" --setgid "${user##*:}" \
      -- /usr/bin/env -i "${env[@]}" "${health_cmd[@]}"
  fi
}
sigterm() {
  if [ "$mode" = podman ]; then
    podman "${podman_global[@]}" stop --time 30 "${containers[-1]}" >/dev/null 2>&1
  else
    kill -TERM "$streamd_pid"
  fi
}

# --- checks -------------------------------------------------------------------------------------
# A volume writable by others is refused before anything is served.
open_dir="$work/volume-open"
install -d -o 10001 -g 10001 -m 0777 "$open_dir"
start "$open_dir" refused
ended 30 || { show_log; fail "streamd kept running on a world-writable volume"; }
[ "$code" = 78 ] || { show_log; fail "a world-writable volume: exit $code, expected 78"; }
show_log | grep -q 'STREAM_DIRECTORY_UNUSABLE.*writable by group or others' ||
  { show_log; fail "the refusal does not name the reason"; }
echo "a world-writable volume is refused: exit 78, STREAM_DIRECTORY_UNUSABLE"

# The data volume: in podman a named volume, which takes the image's owner and mode by itself; under
# chroot a directory prepared as docs/OPERATIONS.md says for a bind mount.
if [ "$mode" = podman ]; then
  volume="streamd-test-$$"
  podman volume create "$volume" >/dev/null
  data="$volume"
else
  data="$work/volume"
  install -d -o 10001 -g 10001 -m 0700 "$data"
fi

start "$data" first
wait_ready
ids="$(awk '/^Uid:|^Gid:/ {print $1, $2, $3, $4, $5}' "/proc/$streamd_pid/status")"
[ "$ids" = "$(printf 'Uid: 10001 10001 10001 10001\nGid: 10001 10001 10001 10001')" ] ||
  fail "streamd does not run as 10001:10001: $ids"
echo "streamd runs as uid and gid 10001 (host pid $streamd_pid)"
[ "$(outside curl -sS "http://$http/healthz")" = ok ] || fail "/healthz on $http did not answer ok"
outside "$streamctl" --broker "$proto" health | grep -q '^status: *ok' || fail "streamctl health on $proto"
echo "protocol on $proto and /healthz on $http answer"
healthcheck >"$work/health.out" 2>&1 || { cat "$work/health.out"; fail "the HEALTHCHECK command failed"; }
echo "HEALTHCHECK exits 0"

value="appended before the restart $$-$RANDOM"
outside "$streamctl" --broker "$proto" create container-test --partitions 1 >/dev/null ||
  fail "streamctl create failed"
outside "$streamctl" --broker "$proto" produce container-test --key k --value "$value" >/dev/null ||
  fail "streamctl produce failed"
sigterm
ended 30 || { show_log; fail "streamd did not stop within 30 s of SIGTERM"; }
[ "$code" = 0 ] || { show_log; fail "SIGTERM: exit $code, expected 0"; }
echo "SIGTERM: exit 0"

start "$data" second
wait_ready
got="$(outside "$streamctl" --broker "$proto" consume container-test --max 1)" || fail "consume after restart"
[ "$got" = "$value" ] || fail "after the restart the record reads '$got', expected '$value'"
echo "the record appended before the restart is read back after it"
sigterm
ended 30 || { show_log; fail "streamd did not stop within 30 s of SIGTERM"; }
[ "$code" = 0 ] || { show_log; fail "SIGTERM after the restart: exit $code, expected 0"; }
t_end="$(now)"

base_what="reused"
[ "$base_made" = 1 ] && base_what="made"
[ -n "$given" ] && base_what="none: image given"
echo "timing: base $((t_base - t0)) s ($base_what), image build $((t_build - t_base)) s," \
  "checks $((t_end - t_build)) s ($mode), total $((t_end - t0)) s"
echo PASS
