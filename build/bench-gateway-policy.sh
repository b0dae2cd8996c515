#!/usr/bin/env bash
# Measures what the gateway's policies (issue 24: tools rules, paths,
# a server's rateLimit, pinned definitions) add to a tools/call, side by
# side with the gateway before them, and writes the table into
# docs/BENCHMARKS.md (the section between the bench-gateway-policy
# markers; the rest of the file is left alone).
#
# Both sides run gateway/policybench_test.go's BenchmarkPolicyCall: this
# tree with its own cases (gateway/policybench_cases_test.go), and the
# commit OLD (default d184085, main just before the policies were merged)
# in a git worktree of its own, with the same benchmark file (and
# served_test.go, which serves the gateway to it) and the two cases it has
# (none, confine; written below). Both test binaries are
# built first, then run ROUNDS times (default 5), alternately, each run
# timing CALLS rounds of calls (default 300); the table gives the median,
# over the runs, of each run's p50, p90 and CPU time per call.
# Usage: build/bench-gateway-policy.sh [ROUNDS [CALLS [OLD]]]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=${1:-5}
calls=${2:-300}
old=$(git -C "$root" rev-parse --short "${3:-d184085}")
doc="$root/docs/BENCHMARKS.md"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/codehydra-bench-policy-XXXXXX")
cleanup() {
	git -C "$root" worktree remove --force "$tmp/old" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

git -C "$root" worktree add --quiet --detach "$tmp/old" "$old"
cp "$root/gateway/policybench_test.go" "$root/gateway/served_test.go" "$tmp/old/gateway/"
cat >"$tmp/old/gateway/policybench_cases_test.go" <<'EOF'
//go:build unix

package gateway

import "codehydra/internal/settings"

// policyCases are the cases the gateway before issue 24 has.
func policyCases() []policyCase {
	none := func(m settings.MCPServer) settings.MCPServer { return m }
	confine := func(m settings.MCPServer) settings.MCPServer { m.Confine = true; return m }
	noOptions := func(*Options, string) {}
	outside := func(string) (string, map[string]any) { return "bench__read", map[string]any{"path": "/etc/passwd"} }
	return []policyCase{
		{"none", none, noOptions, nil},
		{"confine", confine, noOptions, outside},
	}
}
EOF
(cd "$root/gateway" && go test -c -o "$tmp/new.test" .)
(cd "$tmp/old/gateway" && go test -c -o "$tmp/old.test" .)

# run SIDE appends its benchmark line to $tmp/SIDE.out.
run() {
	local dir=$root/gateway
	[[ $1 == old ]] && dir=$tmp/old/gateway
	(cd "$dir" && "$tmp/$1.test" -test.run '^$' -test.bench '^BenchmarkPolicyCall$' -test.benchtime "${calls}x") |
		grep '^BenchmarkPolicyCall' | tee -a "$tmp/$1.out" >&2
}
load_before=$(cut -d' ' -f1 /proc/loadavg)
for ((i = 1; i <= rounds; i++)); do
	if ((i % 2)); then run new; run old; else run old; run new; fi
done
load_after=$(cut -d' ' -f1 /proc/loadavg)

# med SIDE METRIC is the median over the runs of SIDE's METRIC
# ("µs-p50/none"), "" when it has none.
med() {
	awk -v m="$2" '{for (i = 3; i < NF; i += 2) if ($(i + 1) == m) print $i}' "$tmp/$1.out" |
		sort -n | awk '{a[NR] = $1} END {if (NR) print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}
us() { [[ -n $1 ]] && printf '%.0f µs' "$1" || printf '—'; }
added() { [[ -n $1 && -n $2 ]] && awk -v a="$1" -v b="$2" 'BEGIN {printf "%+.0f µs", a - b}' || printf '—'; }

declare -A what=(
	[none]="no policy (pinTools off)"
	[tools]="tools allow and deny globs (2 + 2), by name"
	[confine]="confine: the path argument resolved and judged inside the workspace, deny list"
	[paths]="confine + paths allow (2) and deny (2)"
	[rateLimit]="the server's rateLimit (a bucket taken from)"
	[pins]="pinTools on: the tool's definition pinned, the call checked against the withheld set"
	[all]="tools + confine + paths + rateLimit + pins"
)
rows=()
for c in none tools confine paths rateLimit pins all; do
	o50=$(med old "µs-p50/$c") o90=$(med old "µs-p90/$c") ocpu=$(med old "µs-cpu/$c")
	n50=$(med new "µs-p50/$c") n90=$(med new "µs-p90/$c") ncpu=$(med new "µs-cpu/$c")
	none50=$(med new "µs-p50/none") nonecpu=$(med new "µs-cpu/none")
	rows+=("| $c | ${what[$c]} | $(us "$o50") | $(us "$o90") | $(us "$ocpu") | $(us "$n50") | $(us "$n90") | $(us "$ncpu") | $(added "$n50" "$o50"); $(added "$ncpu" "$ocpu") | $(added "$n50" "$none50"); $(added "$ncpu" "$nonecpu") |")
done

cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
commit=$(git -C "$root" rev-parse --short HEAD)
if [[ -n "$(git -C "$root" status --porcelain -- gateway mcp internal/settings)" ]]; then
	commit+=" (with uncommitted changes)"
fi
section=$(
	cat <<-EOF
		<!-- bench-gateway-policy:begin (written by build/bench-gateway-policy.sh; edits here are overwritten) -->
		## The gateway's policies, per call (issue 24)

		Measured $(date -u '+%Y-%m-%d %H:%M UTC') by \`build/bench-gateway-policy.sh $rounds $calls $old\` on $cpu ($(nproc) cores), $(uname -sr), $(go version | awk '{print $3}'); load average (1 min) $load_before before, $load_after after.

		\`BenchmarkPolicyCall\` (gateway/policybench_test.go) times one \`tools/call\` of \`bench__read\` with \`{"path": "<workspace>/src/a.txt"}\` as a workspace's agent makes it: a go-sdk client with the workspace's token over real HTTP on 127.0.0.1 to CodeHydra's MCP server (token, caller's rate limit raised so as not to time it, the gateway's checks), the gateway, stdio, and a small real MCP server (the test binary, in Go, whose tool answers "ok" at once), workspace-scoped (one instance for the workspace, a real git worktree). Each case has its own gateway, MCP server, client and server process; every round of calls takes the cases in turn, so the machine's load weighs on all alike. Before timing, each case's refusal is checked (a denied tool, a path outside, a denied path), so the policies are in force. *Before* is commit $old (main just before the policies were merged), built from this repository's history with the same benchmark file and the two cases it has; *now* is commit $commit. Median over $rounds runs (old and new alternately) of each run's p50 and p90 over $calls calls, and of its CPU per call: the user and system time of the benchmark's process (client, CodeHydra's MCP server and the gateway; the server process is not counted, and is the same in every case), which the machine's load moves less than the wall time. The last two columns give the differences of the p50s and of the CPU times.

		| case | checked per call | before p50 | before p90 | before CPU | now p50 | now p90 | now CPU | now − before | now − none |
		|---|---|---:|---:|---:|---:|---:|---:|---:|---:|
		$(printf '%s\n' "${rows[@]}")
		<!-- bench-gateway-policy:end -->
	EOF
)
if grep -q '<!-- bench-gateway-policy:begin' "$doc"; then
	SECTION="$section" perl -0pi -e 's/<!-- bench-gateway-policy:begin.*?<!-- bench-gateway-policy:end -->/$ENV{SECTION}/s' "$doc"
else
	printf '\n%s\n' "$section" >>"$doc"
fi
printf '%s\n' "$section"
