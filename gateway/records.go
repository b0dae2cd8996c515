package gateway

import (
	"log/slog"
	"strings"
	"time"

	"codehydra/internal/reap"
)

// serverRecord is the file kept for each running stdio server process in
// the records folder (Options.RecordsDir), so that the next launch can
// reap what a crashed CodeHydra left behind: on Linux the server itself
// dies with CodeHydra (Pdeathsig), but not what it started (npx's child,
// a helper that ignores the end of its input). The fields mean what they
// mean in opencode.AgentRecord; ServerID is the server's MarkerEnv value.
type serverRecord struct {
	PID            int       `json:"pid"`
	PGID           int       `json:"pgid"`
	Server         string    `json:"server"`
	Workspace      string    `json:"workspace,omitempty"`
	StartedAt      time.Time `json:"startedAt"`
	BootID         string    `json:"bootId,omitempty"`
	StartTime      uint64    `json:"startTime,omitempty"`
	ServerID       string    `json:"serverId,omitempty"`
	OwnerPID       int       `json:"ownerPid"`
	OwnerStartTime uint64    `json:"ownerStartTime,omitempty"`
}

// Proof is what the record proves about its server (reap.Record).
func (r serverRecord) Proof() reap.Proof {
	return reap.Proof{PID: r.PID, PGID: r.PGID, BootID: r.BootID, StartTime: r.StartTime, Marker: r.ServerID,
		OwnerPID: r.OwnerPID, OwnerStartTime: r.OwnerStartTime,
		Log: []any{slog.String("server", r.Server), slog.String("workspace", r.Workspace), slog.Time("startedAt", r.StartedAt)}}
}

// markerOf is the value of MarkerEnv in env (the last one, as exec keeps
// the last of duplicates).
func markerOf(env []string) string {
	id := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, MarkerEnv+"="); ok {
			id = v
		}
	}
	return id
}

// record writes the record of the process pid, just started for server
// (in workspace ws, "" if shared) with marker. It runs before anything
// waits for the process, so that its pid is still the server's. A record
// that cannot be written is logged: the server runs, but a crash may
// leave what it started behind.
func (g *Gateway) record(pid int, marker, server, ws string) {
	start, _ := reap.StartTime(pid)
	owner, boot, ownerStart := reap.Owner()
	r := serverRecord{PID: pid, PGID: pid, Server: server, Workspace: ws, StartedAt: time.Now().UTC(),
		BootID: boot, StartTime: start, ServerID: marker, OwnerPID: owner, OwnerStartTime: ownerStart}
	if err := reap.WriteRecord(g.opts.RecordsDir, pid, r); err != nil {
		g.opts.Log.Warn("cannot record an MCP server; a crash may leave what it started running",
			slog.String("server", server), slog.Any("err", err))
	}
}

// unrecord removes the record of the server process pid, once it and its
// group are gone.
func (g *Gateway) unrecord(pid int) {
	if err := reap.RemoveRecord(g.opts.RecordsDir, pid); err != nil {
		g.opts.Log.Warn("remove MCP server record", slog.Int("pid", pid), slog.Any("err", err))
	}
}

// reapOrphans ends the processes of stdio servers that an earlier,
// crashed run of CodeHydra left behind (see reap.Orphans): only those in
// a recorded server's group that carry its marker.
func (g *Gateway) reapOrphans() {
	n, err := reap.Orphans[serverRecord](reap.Reaper{Dir: g.opts.RecordsDir, Kind: "MCP server", MarkerEnv: MarkerEnv,
		StopTimeout: g.opts.StopTimeout, Log: g.opts.Log})
	if err != nil {
		g.opts.Log.Warn("reaping orphaned MCP servers", slog.Any("err", err))
	} else if n > 0 {
		g.opts.Log.Info("reaped orphaned MCP servers", slog.Int("count", n))
	}
}
