package opencode

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"codehydra/internal/atomicfile"
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
	// BootID is the machine's boot when the agent started (see bootID).
	BootID string `json:"bootId,omitempty"`
	// StartTime is when the kernel started the agent, in clock ticks
	// since boot (see processStartTime): a process with the agent's pid
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
	ownerStart, _ := processStartTime(owner)
	return AgentRecord{PID: p.pid, PGID: p.pid, Port: port, Workspace: ws, StartedAt: p.startedAt.UTC(),
		BootID: bootID(), StartTime: p.startTime, AgentID: p.agentID, OwnerPID: owner, OwnerStartTime: ownerStart}
}

// recordPath names the record of pid.
func recordPath(dir string, pid int) string {
	return filepath.Join(dir, strconv.Itoa(pid)+".json")
}

// writeRecord writes r to dir (0600, atomically).
func writeRecord(dir string, r AgentRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode agent record: %w", err)
	}
	if err := atomicfile.Write(recordPath(dir, r.PID), b, 0o600); err != nil {
		return fmt.Errorf("write agent record: %w", err)
	}
	return nil
}

func removeRecord(dir string, pid int) error {
	err := os.Remove(recordPath(dir, pid))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove agent record: %w", err)
	}
	return nil
}

// readRecords reads every record in dir; unreadable files are returned as
// names in bad so that they can be removed.
func readRecords(dir string) (recs []AgentRecord, bad []string, err error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read agents folder: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			bad = append(bad, name)
			continue
		}
		var r AgentRecord
		if json.Unmarshal(b, &r) != nil || r.PID <= 1 {
			bad = append(bad, name)
			continue
		}
		recs = append(recs, r)
	}
	return recs, bad, nil
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
// processes it can prove to be an agent's (see reap) and leaves alone the
// records of this process and of any other CodeHydra still running. It
// returns how many agents' processes it killed. Call it at launch, before
// starting agents.
func (s *Supervisor) ReapOrphans() (int, error) {
	recs, bad, err := readRecords(s.agentsDir)
	if err != nil {
		return 0, err
	}
	for _, name := range bad {
		_ = os.Remove(filepath.Join(s.agentsDir, name))
	}
	self, boot := os.Getpid(), bootID()
	selfStart, _ := processStartTime(self)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		killed int
	)
	for _, r := range recs {
		if r.OwnerPID == self && r.BootID == boot && r.OwnerStartTime == selfStart {
			continue // ours: a pid alone could be of another boot
		}
		keep, reap := s.triage(r, boot)
		if keep {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if reap && s.reap(r) {
				mu.Lock()
				killed++
				mu.Unlock()
			}
			if err := removeRecord(s.agentsDir, r.PID); err != nil {
				s.log.Warn("remove agent record", slog.Int("pid", r.PID), slog.Any("err", err))
			}
		}()
	}
	wg.Wait()
	return killed, nil
}

// triage says what to do with the record r of another CodeHydra process:
// keep it (its owner still runs), or drop it, after reaping its agent if
// reap is set.
func (s *Supervisor) triage(r AgentRecord, boot string) (keep, reap bool) {
	log := s.log.With(slog.Int("pid", r.PID), slog.String("workspace", r.Workspace))
	switch {
	case r.BootID != "" && r.BootID != boot:
		log.Info("agent record of an earlier boot; its processes are gone")
		return false, false
	case ownerRuns(r):
		log.Info("agent record of a CodeHydra that is still running; leaving it alone", slog.Int("owner", r.OwnerPID))
		return true, false
	case r.BootID == "" || r.StartTime == 0 || r.AgentID == "":
		// An older CodeHydra's record, or one written where boot ids and
		// start times cannot be read: its pid and group may be anyone's
		// by now.
		log.Info("agent record cannot prove which processes are the agent's; killing nothing for it")
		return false, false
	}
	return false, true
}

// ownerRuns reports whether the CodeHydra that wrote r still runs: its pid
// lives with the start time it recorded (on the same boot, which the
// caller checked), so it is the same process.
func ownerRuns(r AgentRecord) bool {
	if r.OwnerPID <= 0 || r.OwnerStartTime == 0 {
		return false
	}
	start, err := processStartTime(r.OwnerPID)
	return err == nil && start == r.OwnerStartTime
}

// reap kills the orphan of r, a record of this boot, and reports whether
// it found any process to kill. Only the processes of the agent's group
// whose environment carries the record's marker are signalled — SIGTERM,
// then SIGKILL after the stop timeout — whether the recorded leader still
// runs or not: the agent itself, and what it started (a language server, a
// tool) that its death did not end. A stranger that took the group's id
// after they all ended, or joined it, carries no marker.
func (s *Supervisor) reap(r AgentRecord) bool {
	pgid := cmp.Or(r.PGID, r.PID)
	marker := agentIDEnv + "=" + r.AgentID
	log := s.log.With(slog.Int("pid", r.PID), slog.Int("pgid", pgid), slog.String("workspace", r.Workspace))
	if start, err := processStartTime(r.PID); err == nil {
		if start != r.StartTime {
			// The agent's pid was given to a later process, which
			// also means no process is left in the agent's group.
			log.Info("agent record names a process started after the agent; leaving it alone")
			return false
		}
		if cl, err := processCommandLine(r.PID); err != nil || !looksLikeOpencodeServe(strings.Fields(cl)) {
			log.Info("agent record names a process that is not opencode; leaving it alone")
			return false
		}
	}
	if signalMarked(pgid, marker, nil) == 0 {
		return false
	}
	log.Info("reaping the processes of an orphaned opencode", slog.Time("startedAt", r.StartedAt))
	signalMarked(pgid, marker, syscall.SIGTERM)
	deadline := time.Now().Add(s.opts.StopTimeout)
	for signalMarked(pgid, marker, nil) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	signalMarked(pgid, marker, syscall.SIGKILL)
	return true
}

// signalMarked sends sig (none if nil) to the live processes of group pgid
// that carry marker, and returns how many there were.
func signalMarked(pgid int, marker string, sig os.Signal) int {
	procs := markedMembers(pgid, marker)
	for _, p := range procs {
		if sig != nil {
			_ = p.Signal(sig)
		}
		_ = p.Release()
	}
	return len(procs)
}
