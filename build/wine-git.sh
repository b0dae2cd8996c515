#!/bin/sh
# wine-git.sh: a Windows git.exe for the wine root of wine-setup.sh, built from
# Debian's own git source (trixie, upstream 2.47) with mingw-w64: Git for
# Windows itself comes only from GitHub, and no Debian or npm package ships it
# (npm's dugite and git-win download it from GitHub at install time).
# No curl/https, no perl, no sh: local git only (init, commit, worktree,
# rev-parse, ls-files, status, log, ...); hooks and aliases that need sh do not run.
# Installs C:\git\cmd\git.exe in the prefix and puts it on the Windows PATH.
# Idempotent (a re-run returns at once). Needs root, deb.debian.org, and
# wine-setup.sh's root; build/setup.sh runs it after wine-setup.sh.
set -eu

WINROOT=${WINROOT:-/opt/winroot}
DEST="$WINROOT/root/.wine/drive_c/git/cmd"
[ -f "$WINROOT/.wine-ready" ] || { echo "run wine-setup.sh first" >&2; exit 2; }
exec 9>"$WINROOT.git.lock"
flock -n 9 || { echo "waiting for another build of git.exe (make test's is in the background: its log is beside it)"; flock 9; }
[ -f "$DEST/git.exe" ] && { echo "git.exe already in $DEST"; exit 0; }
t0=$(date +%s)

need=""
for p in gcc-mingw-w64-x86-64 libz-mingw-w64-dev make; do
  dpkg -s "$p" >/dev/null 2>&1 || need="$need $p"
done
[ -z "$need" ] || { apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need >/dev/null; }

W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
# The source through a throwaway apt configuration: the host's sources stay as they are.
mkdir -p "$W/lists/partial" "$W/cache/archives/partial" "$W/src"
echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] ${DEBIAN_MIRROR:-http://deb.debian.org/debian} ${GIT_SUITE:-trixie} main" >"$W/sources.list"
APT="-o Dir::Etc::sourcelist=$W/sources.list -o Dir::Etc::sourceparts=/nonexistent -o Dir::State::Lists=$W/lists -o Dir::Cache=$W/cache -o APT::Sandbox::User=root"
apt-get $APT update -qq
(cd "$W/src" && apt-get $APT source --download-only -qq git >/dev/null)
tar -C "$W/src" -xf "$W"/src/git_*.orig.tar.*
cd "$W"/src/git-*/

# wine gives a Unix pipe an empty object name; git's MSYS-pty probe writes
# through its NULL buffer and crashes whenever stdout/stderr is a Unix pipe.
sed -i 's|^\tname = nameinfo->Name.Buffer;$|&\n\tif (!name)\n\t\treturn;|' compat/winansi.c
grep -q 'if (!name)' compat/winansi.c

make -j"$(nproc)" -s \
  CC=x86_64-w64-mingw32-gcc AR=x86_64-w64-mingw32-ar RC="x86_64-w64-mingw32-windres -O coff" \
  uname_S=MINGW uname_O=Windows uname_M=x86_64 uname_R=10 uname_P=unknown uname_V=unknown MSYSTEM=MINGW64 \
  NO_ICONV=YesPlease NEEDS_LIBICONV= HAVE_LIBCHARSET_H= USE_LIBPCRE= \
  NO_OPENSSL=YesPlease NO_CURL=YesPlease NO_EXPAT=YesPlease NO_PERL=YesPlease NO_PYTHON=YesPlease \
  NO_TCLTK=YesPlease NO_GETTEXT=YesPlease CFLAGS="-O0 -pipe" prefix=/mingw64 git.exe >"$W/make.log" 2>&1 ||
  { tail -30 "$W/make.log" >&2; exit 1; }

mkdir -p "$DEST.tmp"
cp git.exe /usr/x86_64-w64-mingw32/lib/zlib1.dll \
  "$(x86_64-w64-mingw32-gcc -print-file-name=libssp-0.dll)" "$DEST.tmp/"
cd /
WINRUN_PERSIST=1 "$WINROOT.run" --sh 'wine reg add "HKLM\System\CurrentControlSet\Control\Session Manager\Environment" /v PATH /t REG_EXPAND_SZ /f /d "%SystemRoot%\system32;%SystemRoot%;%SystemRoot%\system32\wbem;%SystemRoot%\system32\WindowsPowershell\v1.0;C:\git\cmd" >/dev/null'
mv "$DEST.tmp" "$DEST"
printf 'git.exe installed in C:\\git\\cmd in %s s: %s\n' "$(( $(date +%s) - t0 ))" "$("$WINROOT.run" git --version)"
