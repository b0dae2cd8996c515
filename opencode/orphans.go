package opencode

import (
	"log/slog"
	"slices"
	"strings"
	"time"

	"codehydra/internal/reap"
)

// AgentRecord is the file kept for each running agent under the agents
// folder, so that the next launch can reap agents a crashed app left
// behind. BootID, StartTime and AgentID prove which processes are the
// agent's; a record without them (an older CodeHydra's, or one written
// where they cannot be read) proves nothing, and nothing is killed for it.
type AgentRecord struct {
	PID       int       `json:"pid"`
	PGID      int       `json:"pgid"`
	Port      int       `json:"port"`
	Workspace string    `json:"workspace"`
	StartedAt time.Time `json:"startedAt"`
	// BootID is the machine's boot when the agent started (see reap.BootID).
	BootID string `json:"bootId,omitempty"`
	// StartTime is when the kernel started the agent, in clock ticks
	// since boot (see reap.StartTime): a process with the agent's pid
	// but another start time is not the agent.
	StartTime uint64 `json:"startTime,omitempty"`
	// AgentID is the marker in the environment of the agent and of
	// everything it started (CODEHYDRA_AGENT_ID).
	AgentID string `json:"agentId,omitempty"`
	// OwnerPID is the CodeHydra process that started the agent, and
	// OwnerStartTime when that process started.
	OwnerPID       int    `json:"ownerPid"`
	OwnerStartTime uint64 `json:"ownerStartTime,omitempty"`
}

// newAgentRecord is the record of p, started by this process (owner, its
// pid) for the workspace at ws and listening on port.
func newAgentRecord(p *process, port int, ws string, owner int) AgentRecord {
	ownerStart, _ := reap.StartTime(owner)
	return AgentRecord{PID: p.pid, PGID: p.pid, Port: port, Workspace: ws, StartedAt: p.startedAt.UTC(),
		BootID: reap.BootID(), StartTime: p.startTime, AgentID: p.agentID, OwnerPID: owner, OwnerStartTime: ownerStart}
}

// Proof is what the record proves about its agent (reap.Record).
func (r AgentRecord) Proof() reap.Proof {
	return reap.Proof{PID: r.PID, PGID: r.PGID, BootID: r.BootID, StartTime: r.StartTime, Marker: r.AgentID,
		OwnerPID: r.OwnerPID, OwnerStartTime: r.OwnerStartTime,
		Log: []any{slog.String("workspace", r.Workspace), slog.Time("startedAt", r.StartedAt)}}
}

// looksLikeOpencodeServe reports whether a command line runs `opencode
// serve`: the program, or the script that node (or bun, deno) runs, has a
// base name starting with "opencode", and "serve" is among its arguments.
func looksLikeOpencodeServe(words []string) bool {
	if len(words) == 0 || !slices.Contains(words, "serve") {
		return false
	}
	base := func(w string) string {
		return strings.TrimSuffix(strings.ToLower(w[strings.LastIndexAny(w, `/\`)+1:]), ".exe")
	}
	if strings.HasPrefix(base(words[0]), "opencode") {
		return true
	}
	switch base(words[0]) {
	case "node", "nodejs", "bun", "deno":
		return len(words) > 1 && strings.HasPrefix(base(words[1]), "opencode")
	}
	return false
}

// ReapOrphans ends agents that an earlier run of the app left behind (it
// crashed, or was killed) and removes their records. It kills only
// processes it can prove to be an agent's (see reap.Orphans) and leaves
// alone the records of this process and of any other CodeHydra still
// running. It returns how many agents' processes it killed. Call it at
// launch, before starting agents.
func (s *Supervisor) ReapOrphans() (int, error) {
	return reap.Orphans[AgentRecord](reap.Reaper{Dir: s.agentsDir, Kind: "agent", MarkerEnv: agentIDEnv,
		IsChild: looksLikeOpencodeServe, StopTimeout: s.opts.StopTimeout, Log: s.log})
}
