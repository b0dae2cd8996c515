#!/bin/sh
# wine-setup.sh: wine 10.0 (Debian trixie's own package) in a chroot on a
# Debian 12 host, to run windows/amd64 Go programs and `go test -exec`
# (make test-windows). build/setup.sh runs it with WINROOT under the tools
# folder; from /work/shared/windows of the session that first ran CodeHydra
# under wine.
# Go >= 1.24 needs bcryptprimitives.dll!ProcessPrng, which bookworm's wine 8.0
# lacks; trixie's wine 10.0 has it.
#
# Needs root and deb.debian.org only. The host's apt sources are not touched;
# the one host change is `apt-get install mmdebstrap` (a bookworm package).
# Idempotent: a finished root of the same recipe is kept (a re-run takes a
# second); a half-built one, or one of another recipe, is thrown away and redone.
# Writes $WINROOT.run, the runner (see below).
#
#   WINROOT=/opt/winroot sh build/wine-setup.sh
#   /opt/winroot.run ./app.exe --help
#   GOOS=windows go test -exec /opt/winroot.run ./...
set -eu

WINROOT=${WINROOT:-/opt/winroot}
SUITE=${WINE_SUITE:-trixie}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

# What the root is made of: a change here makes a new root.
RECIPE="suite=$SUITE include=wine,wine64 prefix=wineboot-i-no-mono-gecko"

case "$WINROOT" in /?*/?*) ;; *) echo "WINROOT must be an absolute path two levels deep" >&2; exit 2 ;; esac

# One setup at a time (make test and make test-windows may both run it).
mkdir -p "$(dirname "$WINROOT")"
exec 9>"$WINROOT.lock"
flock -n 9 || { echo "waiting for another build of $WINROOT (make test's is in the background: its log is beside it)"; flock 9; }

if [ "$(cat "$WINROOT/.wine-ready" 2>/dev/null)" != "$RECIPE" ]; then
  t0=$(date +%s)
  command -v mmdebstrap >/dev/null 2>&1 || {
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap >/dev/null
  }
  rm -rf --one-file-system "$WINROOT" "$WINROOT.tmp"
  # mmdebstrap mounts /dev, /proc, /sys for the hooks itself and unmounts them.
  # Hook 1: make the wine prefix once (~20 s), not in every run;
  #   mscoree/mshtml off: no Mono/Gecko prompt (they cannot be downloaded).
  # Hook 2: the prefix's system32 holds copies of wine's PE dlls (~750 MB):
  #   hard-link them to the originals; drop the downloaded .debs (~250 MB).
  mmdebstrap --variant=apt --include=wine,wine64 \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --customize-hook='chroot "$1" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root \
        WINEDEBUG=-all WINEDLLOVERRIDES=mscoree,mshtml= sh -c "wineboot -i && wineserver -w" 2>/dev/null' \
    --customize-hook='hardlink -c -q "$1/root/.wine/drive_c/windows" "$1/usr/lib/x86_64-linux-gnu/wine" && rm -rf "$1"/tmp/* "$1"/tmp/.[!.]* "$1"/var/cache/apt/archives/*.deb "$1"/var/cache/apt/*.bin' \
    "$SUITE" "$WINROOT.tmp" "$MIRROR" >"$WINROOT.log" 2>&1 ||
    { tail -30 "$WINROOT.log" >&2; exit 1; }
  mv "$WINROOT.tmp" "$WINROOT"
  echo "$RECIPE" >"$WINROOT/.wine-ready"
  echo "built $WINROOT in $(( $(date +%s) - t0 )) s: $(du -sh --one-file-system "$WINROOT" | cut -f1), wine $(chroot "$WINROOT" dpkg-query -W -f='${Version}' wine)"
fi

# The runner:  $WINROOT.run PROG.exe [ARGS...]   runs one Windows program;
#              $WINROOT.run --sh 'SCRIPT'        runs a shell script in the chroot
#                (wine on PATH), for scenarios of several programs that must
#                share one wineserver (a server and its client, say).
# Exit status: the program's (the script's). Binds $PWD, the folder of PROG
# when given as a path, and each folder in WINRUN_BIND (colon-separated) at the
# same path in the chroot, so Unix paths work (Windows sees Z:\same\path).
# Each run has a private /tmp, hence its own wineserver; the run ends when that
# wineserver has (wineserver -w): nothing outlives it, and the mounts go with
# its mount namespace. The wine prefix (/root/.wine: registry, C:\users with
# its Temp) is an overlay whose changes live in that private /tmp, so runs
# side by side (go test -p N) do not share one prefix and leave nothing in it;
# WINRUN_PERSIST=1 writes to the prefix itself (setup uses it to install git).
# Usable as `GOOS=windows go test -exec $WINROOT.run ./...`.
cat >"$WINROOT.run" <<EOF
#!/bin/sh
set -eu
R=$WINROOT
EOF
cat >>"$WINROOT.run" <<'EOF'
case "${1:-}" in
  --sh) BINDS=$PWD ;;
  */*) BINDS=$PWD:$(cd "$(dirname "$1")" && pwd) ;;
  *) BINDS=$PWD ;;
esac
export WINRUN_BINDS="$BINDS:${WINRUN_BIND:-}" WINRUN_PERSIST="${WINRUN_PERSIST:-}"
exec unshare --mount --propagation private sh -euc '
  R=$1; shift
  mount -t proc proc "$R/proc"
  mount --rbind /dev "$R/dev"
  mount -t sysfs sysfs "$R/sys"
  mount -t tmpfs -o mode=1777 tmpfs "$R/tmp"
  if [ -z "$WINRUN_PERSIST" ]; then
    mkdir -p "$R/tmp/.prefix/upper" "$R/tmp/.prefix/work"
    mount -t overlay overlay -o "lowerdir=$R/root/.wine,upperdir=$R/tmp/.prefix/upper,workdir=$R/tmp/.prefix/work" "$R/root/.wine"
  fi
  IFS=:
  for d in $WINRUN_BINDS; do
    [ -n "$d" ] && [ "$d" != / ] || continue
    mountpoint -q "$R$d" && continue
    mkdir -p "$R$d"
    mount --rbind "$d" "$R$d"
  done
  unset IFS
  exec chroot "$R" /bin/sh -c "
    cd \"\$0\" || exit 125
    mkdir -m700 /tmp/xdg
    export PATH=/usr/bin:/bin HOME=/root XDG_RUNTIME_DIR=/tmp/xdg \
      WINEDEBUG=\${WINEDEBUG:--all} WINEDLLOVERRIDES=\${WINEDLLOVERRIDES:-mscoree,mshtml=}
    if [ \"\$1\" = --sh ]; then
      shift; sh -c \"\$@\"; rc=\$?
    else
      wineserver -p0  # no 3 s linger after the program: wineserver -w returns at once
      wine \"\$@\"; rc=\$?
    fi
    wineserver -w
    exit \$rc" "$PWD" "$@"
' sh "$R" "$@"
EOF
chmod +x "$WINROOT.run"
echo "wine ready in $WINROOT; run programs with $WINROOT.run prog.exe args"
