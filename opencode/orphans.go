package opencode

import (
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
	"time"

	"codehydra/internal/atomicfile"
)

// AgentRecord is the file kept for each running agent under the agents
// folder, so that the next launch can reap agents a crashed app left
// behind.
type AgentRecord struct {
	PID       int       `json:"pid"`
	PGID      int       `json:"pgid"`
	Port      int       `json:"port"`
	Workspace string    `json:"workspace"`
	StartedAt time.Time `json:"startedAt"`
	// OwnerPID is the CodeHydra process that started the agent.
	OwnerPID int `json:"ownerPid"`
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
// crashed, or was killed) and removes their records. A record's process
// group is killed — SIGTERM, then SIGKILL after the stop timeout — only if
// its leader still runs, still leads that group, and is an opencode
// process; a pid that was reused by something else is never touched.
// Records of this process's own agents are left alone. It returns how many
// groups it killed. Call it at launch, before starting agents.
func (s *Supervisor) ReapOrphans() (int, error) {
	recs, bad, err := readRecords(s.agentsDir)
	if err != nil {
		return 0, err
	}
	for _, name := range bad {
		_ = os.Remove(filepath.Join(s.agentsDir, name))
	}
	self := os.Getpid()
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		killed int
	)
	for _, r := range recs {
		if r.OwnerPID == self {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if s.reap(r) {
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

// reap kills the orphan of r if it is one and reports whether it did.
func (s *Supervisor) reap(r AgentRecord) bool {
	pgid := r.PGID
	if pgid == 0 {
		pgid = r.PID
	}
	got, err := processGroup(r.PID)
	cl, clErr := processCommandLine(r.PID)
	// A dead process that nobody collected yet (or one in the middle of
	// exiting) still has its group but no command line.
	leaderDead := err != nil || (got == pgid && clErr == nil && strings.TrimSpace(cl) == "")
	switch {
	case leaderDead && pgid == r.PID:
		// The agent died with the app (Pdeathsig), but what it started —
		// a language server, a tool — was not told and stays in its
		// group. While any of them lives, the group's id (the agent's
		// pid) cannot be given to another process, so whatever is in the
		// group is the agent's.
		if !liveMembers(pgid) {
			return false
		}
		s.log.Info("reaping processes an orphaned opencode left behind", slog.Int("pgid", pgid),
			slog.String("workspace", r.Workspace), slog.Time("startedAt", r.StartedAt))
	case err != nil || got != pgid:
		return false // gone, or no longer the group we started
	case clErr != nil || !looksLikeOpencodeServe(strings.Fields(cl)):
		s.log.Info("agent record names a process that is not opencode; leaving it alone",
			slog.Int("pid", r.PID), slog.String("workspace", r.Workspace))
		return false
	default:
		s.log.Info("reaping orphaned opencode", slog.Int("pid", r.PID), slog.Int("pgid", pgid),
			slog.String("workspace", r.Workspace), slog.Time("startedAt", r.StartedAt))
	}
	killGroup(pgid, sigTerm)
	deadline := time.Now().Add(s.opts.StopTimeout)
	for liveMembers(pgid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if liveMembers(pgid) {
		killGroup(pgid, sigKill)
	}
	return true
}
