#!/usr/bin/env bash
# Makes the README's screenshots in docs/screenshots/ from the real app:
#   tray-menu.png      the tray menu on xfce4-panel, a workspace's actions open
#   settings.png       the settings window
#   new-workspace.png  the New workspace dialog, a name typed in
# It runs ./codehydra (from `make build`; another binary with
# CODEHYDRA_BIN=...) under Xvfb with xfce4-panel, on a throwaway project with
# three workspaces, everything under a temp folder. With opencode installed
# (build/setup.sh does that) the workspaces have running agents. Rerun it
# after a UI change: make build && build/screenshots.sh
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=build/desktop.sh
source "$root/build/desktop.sh"

bin=$(desktop_app_bin)
out="$root/docs/screenshots"
mkdir -p "$out"
opencode=$(opencode_bin)

desktop_session

project="$tmp/projects/webshop"
desktop_project "$project" feature/login fix-cart-total docs-api
if [[ -n "$opencode" ]]; then
	export OPENCODE_DISABLE_MODELS_FETCH=1
	printf '{"opencodeBin": "%s"}\n' "$opencode" >"$XDG_CONFIG_HOME/codehydra/settings.json"
	ws_label() { echo "○ $1 \\(idle\\)"; }
else
	desktop_say "opencode not found: the workspaces show no running agent"
	printf '{"opencodeBin": "%s"}\n' "$tmp/no-opencode" >"$XDG_CONFIG_HOME/codehydra/settings.json"
	ws_label() { echo "\\S+ $1 \\([a-z ]+\\)"; }
fi

app_start "$bin" --project "$project"
if ! wait_for 90 "tray menu with three settled workspaces" tray_has "$(ws_label feature/login)" "$(ws_label fix-cart-total)" "$(ws_label docs-api)"; then
	tray_layout >&2 || true
	tail -n 20 "$XDG_STATE_HOME/codehydra/codehydra.log" >&2 || true
	exit 1
fi

# The agents report in for a moment after they show idle; each report that
# changes something rebuilds the menu, and a panel redraws an open menu on
# every rebuild, closing its submenus. So wait until the menu stays the
# same for 2 s.
menu_revision() { tray_layout | grep -oP '^\(uint32 \K\d+'; }
steady_since=0 steady_rev=
menu_is_steady() {
	local rev
	rev=$(menu_revision) || return 1
	if [[ "$rev" != "$steady_rev" ]]; then
		steady_rev=$rev steady_since=$(now_ms)
		return 1
	fi
	(($(now_ms) - steady_since >= 2000))
}
menu_steady() {
	steady_rev=
	wait_for 60 "tray menu to stay the same for 2 s" menu_is_steady
}
menu_steady

# crop_windows OUT PNG GEOMETRY... writes the parts of the screenshot PNG
# inside the window geometries (WxH+X+Y) onto a plain background, cut to
# their bounding box plus a margin: Xvfb's root window is black.
crop_windows() {
	local dst=$1 src=$2 g w h x y maxx=0 maxy=0 margin=12
	shift 2
	local parts=()
	for g in "$@"; do
		IFS='x+' read -r w h x y <<<"$g"
		((x + w > maxx)) && maxx=$((x + w))
		((y + h > maxy)) && maxy=$((y + h))
		parts+=("(" "$src" -crop "$g" +repage ")" -geometry "+$x+$y" -composite)
	done
	convert -size "$((maxx + margin))x$((maxy + margin))" xc:'#c8ccd4' "${parts[@]}" "$dst"
}

geometry() {
	local id=$1 X Y WIDTH HEIGHT
	eval "$(xdotool getwindowgeometry --shell "$id" | grep -E '^(X|Y|WIDTH|HEIGHT)=')"
	echo "${WIDTH}x${HEIGHT}+${X}+${Y}"
}

# popups are the visible windows below the panel (the menu and submenus),
# one geometry per line.
popups() {
	local id g
	for id in $(xdotool search --onlyvisible --class wrapper-2.0); do
		g=$(geometry "$id")
		IFS='x+' read -r w h x y <<<"$g"
		((h > 40 && y >= 30)) && echo "$g"
	done
	return 0
}

# capture OUT NAME moves the window titled NAME clear of the panel and
# saves it once it is drawn and still: a window that is mapped but not yet
# drawn is one flat colour, and one being laid out changes between frames.
capture() {
	local dst=$1 name=$2 id deadline prev="" sum
	id=$(window_id "$name")
	xdotool windowmove --sync "$id" 24 56 windowraise "$id"
	deadline=$(($(now_ms) + 20000))
	while :; do
		/usr/bin/import -window "$id" "$dst"
		sum=$(convert "$dst" rgb:- | md5sum)
		if (($(convert "$dst" -format %k info:) > 32)) && [[ "$sum" == "$prev" ]]; then
			return 0
		fi
		prev=$sum
		if (($(now_ms) > deadline)); then
			desktop_say "window $name was not drawn within 20s"
			return 1
		fi
		sleep 0.3
	done
}

popup_count_is() { [[ $(popups | wc -l) -eq $1 ]]; }

# The tray menu, as a user opens it: right-click on the icon, then the
# keyboard down to the first workspace and into its actions.
# find_icon sets ix iy iw ih to the tray icon's place, and panel_geo.
find_icon() {
	local panel icon_geo
	panel=$(xdotool search --onlyvisible --name '^xfce4-panel$' | head -n1)
	panel_geo=$(geometry "$panel")
	icon_geo=$(for id in $(xdotool search --onlyvisible --class wrapper-2.0); do geometry "$id"; done | awk -F'[x+]' '$4 < 30 && $2 > 16 {print; exit}')
	IFS='x+' read -r iw ih ix iy <<<"$icon_geo"
}
find_icon
# The panel can keep a copy of the menu read halfway through a rebuild
# (a submenu empty, the menu cut short): Fyne's tray rebuilds the menu item
# by item, each item a LayoutUpdated signal, and during start-up rebuilds
# come one after another. A panel started now reads the finished menu.
panel_restart
find_icon

# open_menu right-clicks the icon and keys down into the first workspace's
# submenu. GTK takes the keyboard a moment after the menu shows, hence the
# pause; if the submenu does not come, it starts again with a new panel.
open_menu() {
	local try
	for try in 1 2 3; do
		xdotool mousemove "$((ix + iw / 2))" "$((iy + ih / 2))" click 3
		wait_for 10 "tray menu on screen" popup_count_is 1 || return 1
		sleep 0.5
		# The first Down lands on the project heading (it opens the
		# project's actions), the second on its first workspace.
		xdotool key Down Down Right
		if wait_for 5 "workspace submenu on screen" popup_count_is 2; then
			sleep 0.5 # the submenu's highlight
			return 0
		fi
		xdotool key Escape Escape
		wait_for 10 "tray menu to close" popup_count_is 0 || return 1
		desktop_say "restarting xfce4-panel for a fresh copy of the menu"
		panel_restart || return 1
		find_icon
	done
	return 1
}
open_menu
/usr/bin/import -window root "$tmp/screen.png"
mapfile -t menus < <(popups)
right=0
for g in "${menus[@]}"; do
	IFS='x+' read -r w h x y <<<"$g"
	((x + w > right)) && right=$((x + w))
done
IFS='x+' read -r pw ph px py <<<"$panel_geo"
# The panel as wide as the menus, then the menus.
crop_windows "$out/tray-menu.png" "$tmp/screen.png" "$((right + 12))x${ph}+0+0" "${menus[@]}"
xdotool key Escape Escape
wait_for 10 "tray menu to close" popup_count_is 0
# Away from the icon, or its tooltip shows over the windows below.
xdotool mousemove 1200 780

# The settings window. Without a window manager it opens at 0,0 undecorated.
tray_click 'Settings…' >/dev/null
wait_for 20 "settings window" window_id "CodeHydra settings"
capture "$out/settings.png" "CodeHydra settings"

# The New workspace dialog, with a name typed in (it is not created). Every
# prefix of the name is valid, so no error line comes and goes while typing
# (it would leave the window taller).
tray_click 'New workspace…' >/dev/null
wait_for 20 "New workspace dialog" window_id "New workspace"
dialog=$(window_id "New workspace")
xdotool windowfocus --sync "$dialog"
xdotool type --delay 20 search
capture "$out/new-workspace.png" "New workspace"

app_quit
for f in tray-menu settings new-workspace; do
	desktop_say "wrote docs/screenshots/$f.png ($(identify -format '%wx%h' "$out/$f.png"))"
done
