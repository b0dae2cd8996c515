#!/usr/bin/env bash
# Measures the tray app and writes the figures into docs/BENCHMARKS.md
# (the section between the bench-gui markers; the rest of the file is left
# alone):
#   - time from launch to tray ready: from starting ./codehydra until its
#     StatusNotifierItem is on the session bus and its menu (GetLayout) has
#     the project's three workspaces and Quit;
#   - idle memory of the codehydra process alone (agents excluded): VmRSS
#     from /proc/PID/status and Pss from /proc/PID/smaps_rollup, after the
#     app has sat idle with three workspaces.
# Each is measured RUNS times (default 5) and the median reported, without
# agents (opencodeBin set to a missing file) and, when opencode is installed,
# with three running agents whose own memory is not counted.
# It runs under Xvfb with xfce4-panel as the tray host (build/desktop.sh).
# Usage: make build && build/bench-gui.sh [RUNS]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=build/desktop.sh
source "$root/build/desktop.sh"

runs=${1:-5}
idle_secs=${CODEHYDRA_BENCH_IDLE:-10}
bin=$(desktop_app_bin)
opencode=$(opencode_bin)
doc="$root/docs/BENCHMARKS.md"

desktop_session

project="$tmp/projects/bench"
desktop_project "$project" one two three
export OPENCODE_DISABLE_MODELS_FETCH=1

# tray_ready succeeds when the menu shows the three workspaces and Quit;
# with agents, idle ones.
tray_ready() {
	local mark='\S+' phase='[a-z ]+'
	if [[ ${1:-} == idle ]]; then
		mark='○' phase='idle'
	fi
	tray_has "$mark one \\($phase\\)" "$mark two \\($phase\\)" "$mark three \\($phase\\)" Quit
}

# median of the numbers on stdin.
median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%d\n", (a[NR/2]+a[NR/2+1])/2}'; }

# kb FIELD FILE is a "Field:   N kB" value from a /proc file.
kb() { awk -v f="$1:" '$1 == f {print $2}' "$2"; }

# measure MODE runs the app RUNS times and sets the medians READY (ms),
# RSS and PSS (kB), and READY_RANGE (fastest–slowest); each run's values go
# to stderr.
measure() {
	local mode=$1 i start ready rss pss ready_all=() rss_all=() pss_all=()
	for ((i = 1; i <= runs; i++)); do
		start=$(now_ms)
		app_start "$bin" --project "$project"
		until tray_ready >/dev/null 2>&1; do
			if ! kill -0 "$APP_PID" 2>/dev/null; then
				desktop_say "CodeHydra exited during startup; see $XDG_STATE_HOME/codehydra/codehydra.log"
				return 1
			fi
			if (($(now_ms) - start > 60000)); then
				desktop_say "tray not ready within 60s"
				return 1
			fi
			sleep 0.01
		done
		ready=$(($(now_ms) - start))
		if [[ $mode == agents ]]; then
			wait_for 120 "three idle agents" tray_ready idle || return 1
		fi
		# Idle on purpose: what it holds when nothing happens.
		sleep "$idle_secs"
		rss=$(kb VmRSS "/proc/$APP_PID/status")
		pss=$(kb Pss "/proc/$APP_PID/smaps_rollup")
		desktop_say "$mode run $i: tray ready after ${ready} ms, VmRSS ${rss} kB, Pss ${pss} kB"
		ready_all+=("$ready") rss_all+=("$rss") pss_all+=("$pss")
		app_quit
	done
	READY=$(printf '%s\n' "${ready_all[@]}" | median)
	READY_RANGE="$(printf '%s\n' "${ready_all[@]}" | sort -n | head -n1)–$(printf '%s\n' "${ready_all[@]}" | sort -n | tail -n1)"
	RSS=$(printf '%s\n' "${rss_all[@]}" | median)
	PSS=$(printf '%s\n' "${pss_all[@]}" | median)
}

mib() { awk -v k="$1" 'BEGIN {printf "%.1f MiB", k / 1024}'; }

load_before=$(cut -d' ' -f1 /proc/loadavg)
rows=()
printf '{"opencodeBin": "%s"}\n' "$tmp/no-opencode" >"$XDG_CONFIG_HOME/codehydra/settings.json"
measure none
rows+=("| 3 workspaces, no agents | $READY ms ($READY_RANGE) | $(mib "$RSS") | $(mib "$PSS") |")
agents_note="opencode was not installed, so there is no row with agents running."
if [[ -n "$opencode" ]]; then
	printf '{"opencodeBin": "%s"}\n' "$opencode" >"$XDG_CONFIG_HOME/codehydra/settings.json"
	measure agents
	rows+=("| 3 workspaces, 3 idle agents (not counted) | $READY ms ($READY_RANGE) | $(mib "$RSS") | $(mib "$PSS") |")
	agents_note="With agents: opencode $("$opencode" --version 2>/dev/null | head -n1); the tray is ready before the agents are (they start in the background)."
fi

cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
ram=$(awk '/^MemTotal:/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ -n "$(git -C "$root" status --porcelain 2>/dev/null)" ]]; then
	commit+=" (with uncommitted changes)"
fi
section=$(
	cat <<-EOF
		<!-- bench-gui:begin (written by build/bench-gui.sh; edits here are overwritten) -->
		## Tray app: startup and idle memory

		Measured $(date -u '+%Y-%m-%d %H:%M UTC') by \`build/bench-gui.sh $runs\`: median of $runs runs each,
		$("$bin" version) at commit $commit.

		| case | launch to tray ready, median (fastest–slowest) | idle VmRSS | idle Pss |
		|---|---|---|---|
		$(printf '%s\n' "${rows[@]}")

		- *Launch to tray ready*: from starting \`codehydra --project P\` until
		  \`org.kde.StatusNotifierItem-<pid>-1\` is on the session bus and its menu
		  (\`com.canonical.dbusmenu.GetLayout\`) lists the three workspaces and Quit.
		  This includes settings, the lock, the MCP server, the OpenCode config,
		  discovering the worktrees and the tray-host check; it is polled every
		  10 ms with \`gdbus\`, which adds a few ms.
		- *Idle memory*: of the \`codehydra\` process only (agents are separate
		  processes and excluded), after ${idle_secs} s idle with no window open.
		  VmRSS is from \`/proc/<pid>/status\`; Pss (\`/proc/<pid>/smaps_rollup\`)
		  shares shared libraries out among the processes that map them, so it is
		  the fairer figure, but it moves with what else runs (another program
		  that maps the same Mesa libraries lowers their share). Under Xvfb,
		  OpenGL is Mesa's software renderer (llvmpipe), which is in these
		  figures; a GPU driver differs.
		- ${agents_note}
		- Load average (1 min) $load_before before and $(cut -d' ' -f1 /proc/loadavg) after the runs:
		  on a busy machine the start-up times spread (agents starting take CPU
		  from the app); VmRSS hardly moves.
		- Tray host: xfce4-panel $(xfce4-panel --version 2>/dev/null | awk 'NR == 1 {print $2}') (systray plugin) under Xvfb 1280x800x24.

		| machine | |
		|---|---|
		| CPU | ${cpu} |
		| cores (nproc) | $(nproc) |
		| RAM | ${ram} |
		| kernel | $(uname -sr) |
		| OS | $(. /etc/os-release && echo "$PRETTY_NAME") |
		| Go | $(go version 2>/dev/null | awk '{print $3}') |
		<!-- bench-gui:end -->
	EOF
)

mkdir -p "$(dirname "$doc")"
if [[ ! -f "$doc" ]]; then
	printf '# Benchmarks\n\nFigures measured on real runs; each section says how to measure it again.\n\n' >"$doc"
fi
if grep -q '<!-- bench-gui:begin' "$doc"; then
	SECTION="$section" perl -0pi -e 's/<!-- bench-gui:begin.*?<!-- bench-gui:end -->/$ENV{SECTION}/s' "$doc"
else
	printf '%s\n' "$section" >>"$doc"
fi
desktop_say "wrote the figures into docs/BENCHMARKS.md"
