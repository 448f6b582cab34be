#!/usr/bin/env bash
# Builds the .deb with cpack from an already built tree, then checks what it holds and that it
# installs to a staging root: the binaries where the unit expects them, the production config as a
# conffile, the unit, the client library usable through pkg-config, the maintainer scripts, and the
# shared-library dependencies dpkg-shlibdeps found.
#
# usage: deb_test.sh BUILD_DIR SOURCE_DIR STREAMD STREAMCTL
# Exits 77 (ctest SKIP) when a binary is not built yet or packaging tools are missing.
set -euo pipefail
build="$1" source="$2" streamd="$3" streamctl="$4"

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -x "$streamd" ] || skip "streamd is not built ($streamd)"
[ -x "$streamctl" ] || skip "streamctl is not built ($streamctl)"
for tool in cpack dpkg-deb dpkg-shlibdeps pkg-config; do
  command -v "$tool" >/dev/null || skip "$tool is not installed"
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cpack --config "$build/CPackConfig.cmake" -G DEB -B "$work/out" >"$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log"; fail "cpack failed"; }
debs=("$work"/out/*.deb)
[ ${#debs[@]} -eq 1 ] && [ -f "${debs[0]}" ] || fail "expected one .deb in $work/out"
deb="${debs[0]}"
echo "built $(basename "$deb") ($(stat -c %s "$deb") bytes)"

dpkg-deb --contents "$deb" | awk '{print $NF}' | sed 's#^\./#/#' >"$work/contents"
for path in /usr/bin/streamd /usr/bin/streamctl /etc/streamd/streamd.yaml \
  /lib/systemd/system/streamd.service /usr/include/streamd/client/connection.h \
  /usr/share/doc/streamd/README.md /usr/share/doc/streamd/OPERATIONS.md /usr/share/doc/streamd/CONFIG.md; do
  grep -qx -- "$path" "$work/contents" || fail "$path missing from the package"
done
grep -q '/libstreamd-client\.a$' "$work/contents" || fail "libstreamd-client.a missing from the package"
grep -q '/pkgconfig/streamd-client\.pc$' "$work/contents" || fail "streamd-client.pc missing from the package"
! grep -q '/wire\.h$' "$work/contents" || fail "the internal client/wire.h must not be installed"

# The unit starts exactly what the package installs.
exec_start="$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$source/deploy/streamd.service")"
grep -qx -- "$exec_start" "$work/contents" || fail "the unit's ExecStart $exec_start is not in the package"

dpkg-deb --field "$deb" Package Version Architecture Depends >"$work/control"
cat "$work/control"
for lib in libprotobuf32 libyaml-cpp0.7 libspdlog1.10 libssl3 libstdc++6 libc6; do
  grep -q "^Depends:.*\b$lib\b" "$work/control" || fail "Depends lacks $lib"
done
dpkg-deb --ctrl-tarfile "$deb" | tar -t | sed 's#^\./##' >"$work/control-files"
for f in postinst prerm postrm conffiles; do
  grep -qx "$f" "$work/control-files" || fail "control member $f missing"
done
dpkg-deb --info "$deb" conffiles | grep -qx /etc/streamd/streamd.yaml || fail "the config is not a conffile"
dpkg-deb --info "$deb" postinst | grep -q 'useradd --system' || fail "postinst does not create the user"

# Install to a staging root and use what was installed.
root="$work/root"
dpkg-deb -x "$deb" "$root"
cmp "$root/etc/streamd/streamd.yaml" "$source/deploy/streamd.yaml" || fail "installed config differs"
cmp "$root/lib/systemd/system/streamd.service" "$source/deploy/streamd.service" || fail "installed unit differs"
[ "$(stat -c %a "$root/usr/bin/streamd")" = 755 ] || fail "streamd is not mode 0755"
"$root/usr/bin/streamd" --version | grep -q '^streamd ' || fail "the installed streamd does not run"
"$root/usr/bin/streamctl" --help >/dev/null || fail "the installed streamctl does not run"

# The client library and headers link through the installed pkg-config file alone, and the program
# talks to (no) broker: every header compiles on its own and the protocol code is linked in.
pc_dir="$(dirname "$(find "$root" -name streamd-client.pc)")"
{
  for h in "$root"/usr/include/streamd/client/*.h; do echo "#include \"client/$(basename "$h")\""; done
  cat <<'CC'
#include <cstdio>
int main() {
  streamd::client::ConnectionOptions options;
  options.broker = {"127.0.0.1", 1};  // nothing listens on port 1
  streamd::client::Connection connection(options);
  streamd::client::Status s = connection.connect(std::chrono::milliseconds(2000));
  std::printf("%s\n", s.ok() ? "connected" : s.error().name().c_str());
  return s.ok() ? 1 : 0;
}
CC
} >"$work/use_client.cc"
# shellcheck disable=SC2046  # pkg-config's output is a list of words by design
c++ -o "$work/use_client" "$work/use_client.cc" $(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs streamd-client) ||
  fail "a program does not build against the installed client library"
[ "$("$work/use_client")" = UNAVAILABLE ] || fail "the linked client did not report UNAVAILABLE"

echo "PASS: $(wc -l <"$work/contents") paths; installed to a staging root and linked against"
