// Package reap keeps the processes CodeHydra starts (agents, the user's
// MCP servers) from outliving it. Each child runs in its own process
// group with a random marker in its environment, which everything it
// starts inherits, and has a record in a folder of records while it runs.
// After CodeHydra crashed or was killed, the next launch reads the records
// and signals only the processes it can prove to be the child's: of this
// boot, of a dead owner, with the recorded start time, carrying the
// marker. Spawner keeps Linux's Pdeathsig tied to
// the app's life rather than to a thread's.
package reap

import (
	"cmp"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proof is what a record says about its child, and all that reaping
// trusts. A record missing BootID, StartTime or Marker (an older
// CodeHydra's, or one written where they cannot be read) proves nothing,
// and nothing is killed for it.
type Proof struct {
	PID  int
	PGID int // the child's group; PID when 0
	// BootID is the machine's boot when the child started (see BootID).
	BootID string
	// StartTime is when the kernel started the child (see StartTime): a
	// process with its pid but another start time is not the child.
	StartTime uint64
	// Marker is the value of the reaper's MarkerEnv in the environment of
	// the child and of everything it started.
	Marker string
	// OwnerPID is the CodeHydra process that started the child, and
	// OwnerStartTime when that process started.
	OwnerPID       int
	OwnerStartTime uint64
	// Log names the child in the log (its workspace, its server).
	Log []any
}

// Record is a child's record as stored in a records folder (JSON).
type Record interface {
	Proof() Proof
}

// Owner is this process's pid, boot and start time, as a record's owner.
func Owner() (pid int, boot string, start uint64) {
	pid = os.Getpid()
	start, _ = StartTime(pid)
	return pid, BootID(), start
}

// Reaper reaps the orphans of one kind of child.
type Reaper struct {
	// Dir holds the records.
	Dir string
	// Kind names the child in the log ("agent", "MCP server").
	Kind string
	// MarkerEnv names the variable that holds the marker.
	MarkerEnv string
	// IsChild reports whether the command line of a recorded leader that
	// still runs is one of these children; nil takes any.
	IsChild func(words []string) bool
	// StopTimeout is how long the marked processes have between SIGTERM
	// and SIGKILL.
	StopTimeout time.Duration
	Log         *slog.Logger
}

// Orphans ends the children that an earlier run of the app left behind
// (it crashed, or was killed) and removes their records. It kills only
// processes it can prove to be a child's (see reap) and leaves alone the
// records of this process and of any other CodeHydra still running. It
// returns how many children's processes it killed.
func Orphans[T Record](rp Reaper) (int, error) {
	recs, bad, err := ReadRecords[T](rp.Dir)
	if err != nil {
		return 0, err
	}
	for _, name := range bad {
		_ = os.Remove(filepath.Join(rp.Dir, name))
	}
	self, boot, selfStart := Owner()
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		killed int
	)
	for _, rec := range recs {
		r := rec.Proof()
		if r.OwnerPID == self && r.BootID == boot && r.OwnerStartTime == selfStart {
			continue // ours: a pid alone could be of another boot
		}
		keep, reap := rp.triage(r, boot)
		if keep {
			continue
		}
		wg.Go(func() {
			if reap && rp.reap(r) {
				mu.Lock()
				killed++
				mu.Unlock()
			}
			if err := RemoveRecord(rp.Dir, r.PID); err != nil {
				rp.Log.Warn("remove "+rp.Kind+" record", slog.Int("pid", r.PID), slog.Any("err", err))
			}
		})
	}
	wg.Wait()
	return killed, nil
}

// triage says what to do with the record r of another CodeHydra process:
// keep it (its owner still runs), or drop it, after reaping its child if
// reap is set.
func (rp Reaper) triage(r Proof, boot string) (keep, reap bool) {
	log := rp.Log.With(slog.Int("pid", r.PID)).With(r.Log...)
	switch {
	case r.BootID != "" && r.BootID != boot:
		log.Info(rp.Kind + " record of an earlier boot; its processes are gone")
		return false, false
	case ownerRuns(r):
		log.Info(rp.Kind+" record of a CodeHydra that is still running; leaving it alone", slog.Int("owner", r.OwnerPID))
		return true, false
	case r.BootID == "" || r.StartTime == 0 || r.Marker == "":
		// An older CodeHydra's record, or one written where boot ids and
		// start times cannot be read: its pid and group may be anyone's
		// by now.
		log.Info(rp.Kind + " record cannot prove which processes are its; killing nothing for it")
		return false, false
	}
	return false, true
}

// ownerRuns reports whether the CodeHydra that wrote r still runs: its pid
// lives with the start time it recorded (on the same boot, which the
// caller checked), so it is the same process.
func ownerRuns(r Proof) bool {
	if r.OwnerPID <= 0 || r.OwnerStartTime == 0 {
		return false
	}
	start, err := StartTime(r.OwnerPID)
	return err == nil && start == r.OwnerStartTime
}

// reap kills the orphan of r, a record of this boot, and reports whether
// it found any process to kill. Only the processes whose environment
// carries the record's marker are signalled — SIGTERM, then SIGKILL after
// the stop timeout — whether the recorded leader still runs or not: the
// child itself, and what it started (a language server, a tool, what npx
// ran) that its death did not end, in the child's group or one it left
// for (a server started with setsid). A stranger that took the group's id
// after they all ended, or joined it, carries no marker: the marker is
// random per child, and only what the child started inherits it. A
// recorded leader that still runs must still lead the recorded group.
func (rp Reaper) reap(r Proof) bool {
	pgid := cmp.Or(r.PGID, r.PID)
	marker := rp.MarkerEnv + "=" + r.Marker
	log := rp.Log.With(slog.Int("pid", r.PID), slog.Int("pgid", pgid)).With(r.Log...)
	if start, err := StartTime(r.PID); err == nil {
		if start != r.StartTime {
			// The child's pid was given to a later process, which
			// also means no process is left in the child's group.
			log.Info(rp.Kind + " record names a process started after it; leaving it alone")
			return false
		}
		if g, err := groupOf(r.PID); err != nil || g != pgid {
			// The child leads its group for life; a leader elsewhere
			// is not the child, whatever its environment says.
			log.Info(rp.Kind + " record names a process that does not lead the recorded group; leaving it alone")
			return false
		}
		if rp.IsChild != nil {
			if cl, err := CommandLine(r.PID); err != nil || !rp.IsChild(strings.Fields(cl)) {
				log.Info(rp.Kind + " record names a process that is not one; leaving it alone")
				return false
			}
		}
	}
	if SignalMarked(marker, nil) == 0 {
		return false
	}
	log.Info("reaping the processes of an orphaned " + rp.Kind)
	SignalMarked(marker, syscall.SIGTERM)
	deadline := time.Now().Add(rp.StopTimeout)
	for SignalMarked(marker, nil) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	SignalMarked(marker, syscall.SIGKILL)
	return true
}

// SignalMarked sends sig (none if nil) to the live processes that carry
// marker (see Marked), and returns how many there were.
func SignalMarked(marker string, sig os.Signal) int {
	procs := Marked(marker)
	for _, p := range procs {
		if sig != nil {
			_ = p.Signal(sig)
		}
		_ = p.Release()
	}
	return len(procs)
}
