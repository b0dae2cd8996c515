# shellcheck shell=bash
# A throwaway desktop for scripts that drive CodeHydra's GUI: Xvfb, a session
# bus from dbus-launch, and xfce4-panel with only its systray plugin (a
# StatusNotifier host, so the app shows its tray icon). Sourced by
# build/screenshots.sh and build/bench-gui.sh; not run on its own.
#
#   desktop_start DIR   start everything, with XDG_* and HOME under DIR
#   desktop_stop        stop everything desktop_start and app_start started
#   panel_restart       replace the panel with a new one
#   app_start BIN ARGS  start CodeHydra on the desktop (APP_PID is its pid)
#   app_quit            click Quit and wait for CodeHydra to exit
#   tray_layout         the tray menu as gdbus prints GetLayout
#   tray_has LABEL...   whether the menu has items labelled so (regexps)
#   tray_click LABEL    click the tray menu item LABEL over D-Bus
#   wait_for SECS WHAT CMD...  run CMD until it succeeds, or fail after SECS
#   pid_gone PID        whether the process has ended
#   now_ms              the time in milliseconds
# build/bench (the core benchmark) uses it too.

DESKTOP_TOOLS=(Xvfb dbus-launch xfce4-panel xdotool gdbus /usr/bin/import /usr/bin/convert)

desktop_say() { printf '%s: %s\n' "${0##*/}" "$*" >&2; }

desktop_check_tools() {
	local tool missing=()
	for tool in "${DESKTOP_TOOLS[@]}"; do
		command -v "$tool" >/dev/null || missing+=("$tool")
	done
	if ((${#missing[@]})); then
		desktop_say "missing ${missing[*]}: run build/setup.sh (or make setup) first"
		return 1
	fi
}

# now_ms is the time in milliseconds.
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# wait_for SECS WHAT CMD... runs CMD every 50 ms until it succeeds.
wait_for() {
	local secs=$1 what=$2 deadline
	shift 2
	deadline=$(($(now_ms) + secs * 1000))
	until "$@" >/dev/null 2>&1; do
		if (($(now_ms) > deadline)); then
			desktop_say "no $what within ${secs}s"
			return 1
		fi
		if [[ -n "${APP_PID:-}" ]] && ! kill -0 "$APP_PID" 2>/dev/null; then
			desktop_say "CodeHydra exited while waiting for $what; its log: $XDG_STATE_HOME/codehydra/codehydra.log"
			return 1
		fi
		sleep 0.05
	done
}

DESKTOP_GROUPS=()

desktop_start() {
	local dir=$1 v
	desktop_check_tools || return 1
	for v in XDG_CONFIG_HOME XDG_DATA_HOME XDG_STATE_HOME XDG_CACHE_HOME XDG_RUNTIME_DIR HOME; do
		mkdir -p "$dir/${v,,}"
		chmod 700 "$dir/${v,,}"
		export "$v=$dir/${v,,}"
	done
	export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
	export GIT_AUTHOR_NAME=CodeHydra GIT_AUTHOR_EMAIL=codehydra@example.com
	export GIT_COMMITTER_NAME=CodeHydra GIT_COMMITTER_EMAIL=codehydra@example.com
	unset WAYLAND_DISPLAY SESSION_MANAGER

	# -displayfd: the server picks a free display and writes its number.
	setsid Xvfb -displayfd 3 -noreset -screen 0 1280x800x24 -nolisten tcp 3>"$dir/display" >"$dir/xvfb.log" 2>&1 &
	DESKTOP_GROUPS+=($!)
	wait_for 30 "X server" test -s "$dir/display" || return 1
	export DISPLAY=":$(head -n1 "$dir/display")"

	# The bus daemon gets a process group of its own, which the services it
	# starts on demand (xfconfd, the accessibility bus) join.
	eval "$(dbus-launch --sh-syntax)"
	DESKTOP_GROUPS+=("$DBUS_SESSION_BUS_PID")

	# The panel's settings come from xfconf; build/xfce4-panel.xml gives one
	# panel along the top with just the systray plugin (which also hosts
	# StatusNotifier items), and keeps the first-run dialog away. The GUI
	# tests that need a real panel use it too.
	local xml="$XDG_CONFIG_HOME/xfce4/xfconf/xfce-perchannel-xml"
	mkdir -p "$xml"
	cp "$(dirname "${BASH_SOURCE[0]}")/xfce4-panel.xml" "$xml/xfce4-panel.xml"
	DESKTOP_DIR=$dir
	panel_start
}

# panel_start starts xfce4-panel (PANEL_PID) and waits until it hosts tray
# items.
panel_start() {
	setsid xfce4-panel --disable-wm-check >>"$DESKTOP_DIR/panel.log" 2>&1 &
	PANEL_PID=$!
	DESKTOP_GROUPS+=("$PANEL_PID")
	wait_for 30 "StatusNotifier host (xfce4-panel)" host_registered
}

# panel_restart replaces the panel with a new one, which reads the tray
# menu afresh; the app registers its icon with the new one by itself.
panel_restart() {
	kill -TERM -- "-$PANEL_PID" 2>/dev/null || true
	wait_for 10 "xfce4-panel to stop" pid_gone "$PANEL_PID"
	panel_start
	wait_for 30 "tray icon registered with the new panel" item_registered
}

item_registered() {
	gdbus call --session --dest org.kde.StatusNotifierWatcher --object-path /StatusNotifierWatcher \
		--method org.freedesktop.DBus.Properties.Get org.kde.StatusNotifierWatcher RegisteredStatusNotifierItems |
		grep -q StatusNotifierItem
}

host_registered() {
	gdbus call --session --dest org.kde.StatusNotifierWatcher --object-path /StatusNotifierWatcher \
		--method org.freedesktop.DBus.Properties.Get org.kde.StatusNotifierWatcher IsStatusNotifierHostRegistered |
		grep -q true
}

# app_start BIN ARGS... starts CodeHydra; APP_PID is its pid.
app_start() {
	setsid "$@" >>"$XDG_STATE_HOME/app.out" 2>&1 &
	APP_PID=$!
	DESKTOP_GROUPS+=("$APP_PID")
}

# app_quit clicks Quit and waits for the app to exit.
app_quit() {
	local pid=$APP_PID
	tray_click Quit >/dev/null 2>&1 || true
	APP_PID=
	wait_for 30 "CodeHydra to exit after Quit" pid_gone "$pid"
}

pid_gone() { ! kill -0 "$1" 2>/dev/null; }

desktop_stop() {
	local g
	for ((i = ${#DESKTOP_GROUPS[@]} - 1; i >= 0; i--)); do
		g=${DESKTOP_GROUPS[i]}
		kill -TERM -- "-$g" 2>/dev/null || kill -TERM "$g" 2>/dev/null || true
	done
	sleep 0.2
	for g in "${DESKTOP_GROUPS[@]}"; do
		kill -KILL -- "-$g" 2>/dev/null || true
	done
	DESKTOP_GROUPS=()
}

tray_name() { echo "org.kde.StatusNotifierItem-$APP_PID-1"; }

tray_layout() {
	gdbus call --session --dest "$(tray_name)" --object-path /StatusNotifierMenu \
		--method com.canonical.dbusmenu.GetLayout -- 0 -1 '@as []'
}

# tray_has LABEL... succeeds when the menu has an item labelled each LABEL
# (a regular expression matched against the whole label). grep runs on bytes
# (LC_ALL=C): in a UTF-8 locale grep -P's \S does not match marks like ✕.
tray_has() {
	local layout label
	layout=$(tray_layout) || return 1
	for label in "$@"; do
		LC_ALL=C grep -qP "'label': <'$label'>" <<<"$layout" || return 1
	done
}

# tray_id LABEL is the id of the menu item labelled LABEL.
tray_id() {
	tray_layout | LC_ALL=C grep -oP "\(\d+, \{[^{}]*'label': <'$1'>" | head -n1 | grep -oP '^\(\K\d+'
}

tray_click() {
	local id
	id=$(tray_id "$1") || return 1
	[[ -n "$id" ]] || return 1
	gdbus call --session --dest "$(tray_name)" --object-path /StatusNotifierMenu \
		--method com.canonical.dbusmenu.Event -- "$id" clicked '<0>' 0
}

# window_id NAME is the visible window titled exactly NAME.
window_id() { xdotool search --onlyvisible --name "^$1\$" | head -n1; }

# desktop_app_bin prints the app binary a script runs: $CODEHYDRA_BIN, else
# ./codehydra from `make build`; it fails, saying so, when there is none.
desktop_app_bin() {
	local bin
	bin=$(realpath "${CODEHYDRA_BIN:-$root/codehydra}" 2>/dev/null || true)
	if [[ ! -x "$bin" ]]; then
		desktop_say "no ${CODEHYDRA_BIN:-./codehydra}: run make build first"
		return 1
	fi
	echo "$bin"
}

# desktop_session makes a temp folder ($tmp), starts the desktop in it and
# stops both when the script exits.
desktop_session() {
	tmp=$(mktemp -d)
	trap desktop_session_end EXIT
	desktop_start "$tmp"
}

desktop_session_end() {
	desktop_stop
	rm -rf "$tmp"
}

# desktop_project DIR BRANCH... makes a project at DIR (git_project) with a
# worktree for each BRANCH beside it (DIR-<branch, "/" as "-">), and the
# app's config folder.
desktop_project() {
	local dir=$1 branch
	shift
	git_project "$dir"
	for branch in "$@"; do
		git -C "$dir" worktree add -q -b "$branch" "$dir-${branch//\//-}"
	done
	mkdir -p "$XDG_CONFIG_HOME/codehydra"
}

# git_project DIR makes a small repository with a few commits in DIR.
git_project() {
	local dir=$1
	mkdir -p "$dir"
	git -C "$dir" init -q -b main
	printf '# %s\n' "${dir##*/}" >"$dir/README.md"
	git -C "$dir" add README.md
	git -C "$dir" commit -q -m "Start the project"
	printf 'print("hello")\n' >"$dir/app.py"
	git -C "$dir" add app.py
	git -C "$dir" commit -q -m "Add the app"
}

# opencode_bin is the opencode executable build/setup.sh installed (or one
# on PATH), "" when there is none. Call it before desktop_start moves
# XDG_DATA_HOME.
opencode_bin() {
	local tools="${XDG_DATA_HOME:-$HOME/.local/share}/codehydra/tools/node_modules/.bin/opencode"
	if [[ -x "$tools" ]]; then
		echo "$tools"
	else
		command -v opencode || true
	fi
}
