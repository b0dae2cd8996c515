//go:build linux

package opencode

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"codehydra/internal/testenv"
)

// These tests pin that the orphan reaper kills only what it can prove to be
// an agent's: a process of this boot, with the recorded start time, whose
// environment carries the agent's marker. Records are edited as plain JSON
// so that each test also runs against a reaper that knows nothing of these
// proofs (and fails there).

// writeRawRecord writes the agent record rec for pid as JSON.
func writeRawRecord(t *testing.T, dir string, pid int, rec map[string]any) {
	t.Helper()
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(pid)+".json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// editRecord changes the agent record of pid in dir.
func editRecord(t *testing.T, dir string, pid int, edit func(rec map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(pid)+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	edit(rec)
	writeRawRecord(t, dir, pid, rec)
}

// thisBoot is the machine's boot id, read here rather than through the
// code under test.
func thisBoot(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// killGroupAtCleanup ends group pgid when the test is over, whatever the
// reaper did to it.
func killGroupAtCleanup(t *testing.T, pgid int) {
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
}

// orphanOfACrashedApp runs an app with one agent that survives its app's
// death signal, kills the app, and returns the agent's record.
func orphanOfACrashedApp(t *testing.T, f *fixture) AgentRecord {
	t.Helper()
	app := startCrashingApp(t, f, f.workspace("a"))
	recs := agentRecords(t, f.agentsDir)
	if len(recs) != 1 {
		t.Fatalf("records = %v, want one", recs)
	}
	killGroupAtCleanup(t, recs[0].PGID)
	if err := app.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = app.Wait()
	if processGone(recs[0].PID) {
		t.Fatal("agent died with the app although it ignores SIGTERM; the test proves nothing")
	}
	return recs[0]
}

// reapNothing runs ReapOrphans and fails the test unless it killed nothing.
func reapNothing(t *testing.T, f *fixture) {
	t.Helper()
	o := f.options()
	o.StopTimeout = 300 * time.Millisecond
	if killed, err := f.start(o).ReapOrphans(); err != nil || killed != 0 {
		t.Fatalf("ReapOrphans = %d, %v; want 0, nil", killed, err)
	}
}

func TestReapOrphansLeavesAStrangerInTheGroupOfAGoneLeader(t *testing.T) {
	f := newFixture(t)
	// A group whose leader is gone and whose one member is not ours: what
	// a stale record's group id may name once the agent and all it
	// started are long gone.
	sh := exec.Command("sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!")
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := sh.Output()
	if err != nil {
		t.Fatal(err)
	}
	pgid := sh.Process.Pid
	killGroupAtCleanup(t, pgid)
	stranger, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := syscall.Getpgid(stranger); err != nil || got != pgid {
		t.Fatalf("stranger %d in group %d, %v; want %d", stranger, got, err, pgid)
	}
	writeRawRecord(t, f.agentsDir, pgid, map[string]any{"pid": pgid, "pgid": pgid, "workspace": "/x",
		"ownerPid": 999999, "bootId": thisBoot(t), "startTime": 1, "agentId": "the-agent-that-was-here"})

	reapNothing(t, f)
	if processGone(stranger) {
		t.Fatal("ReapOrphans killed a process that does not carry the agent's marker")
	}
	if recs := agentRecords(t, f.agentsDir); len(recs) != 0 {
		t.Errorf("records left: %v", recs)
	}
}

func TestReapOrphansKillsNothingForARecordItCannotProve(t *testing.T) {
	tests := []struct {
		name string
		edit func(rec map[string]any)
	}{
		{"of another boot", func(rec map[string]any) { rec["bootId"] = "9b1f0c55-another-boot" }},
		{"of another boot whose owner had this process's pid", func(rec map[string]any) {
			rec["bootId"], rec["ownerPid"] = "9b1f0c55-another-boot", os.Getpid()
		}},
		{"whose leader started at another time", func(rec map[string]any) { rec["startTime"] = 1 }},
		{"whose marker the agent does not carry", func(rec map[string]any) { rec["agentId"] = "someone-else" }},
		{"written by an older CodeHydra", func(rec map[string]any) {
			for _, k := range []string{"bootId", "startTime", "agentId", "ownerStartTime"} {
				delete(rec, k)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, "FAKEOC_IGNORE_TERM=1")
			r := orphanOfACrashedApp(t, f)
			editRecord(t, f.agentsDir, r.PID, tt.edit)

			reapNothing(t, f)
			if processGone(r.PID) {
				t.Fatal("ReapOrphans killed the process of a record it cannot prove")
			}
			if recs := agentRecords(t, f.agentsDir); len(recs) != 0 {
				t.Errorf("records left: %v", recs)
			}
		})
	}
}

func TestReapOrphansLeavesTheAgentsOfARunningCodeHydra(t *testing.T) {
	f := newFixture(t)
	app := startCrashingApp(t, f, f.workspace("a"))
	recs := agentRecords(t, f.agentsDir)
	if len(recs) != 1 || recs[0].OwnerPID != app.Process.Pid {
		t.Fatalf("records = %v, want one of the app %d", recs, app.Process.Pid)
	}
	reapNothing(t, f)
	if processGone(recs[0].PID) {
		t.Fatal("ReapOrphans killed the agent of a CodeHydra that still runs")
	}
	if got := agentRecords(t, f.agentsDir); len(got) != 1 {
		t.Errorf("records = %v, want the running app's record kept", got)
	}
}

func TestReapOrphansKillsOnlyTheMarkedProcessesOfAnOrphansGroup(t *testing.T) {
	f := newFixture(t, "FAKEOC_IGNORE_TERM=1")
	gcFile, strangerFile := filepath.Join(f.dir, "grandchild.pid"), filepath.Join(f.dir, "stranger.pid")
	// A process in the orphan's group without its marker: the agent is
	// its session's leader, so no process from outside can join its group;
	// the agent itself starts one with its environment cleaned.
	f.env = append(f.env, "FAKEOC_GRANDCHILD_PIDFILE="+gcFile, "FAKEOC_UNMARKED_PIDFILE="+strangerFile)
	r := orphanOfACrashedApp(t, f)
	grandchild, stranger := readPID(t, gcFile), readPID(t, strangerFile)
	t.Cleanup(func() { _ = syscall.Kill(stranger, syscall.SIGKILL) })

	o := f.options()
	o.StopTimeout = 300 * time.Millisecond
	if killed, err := f.start(o).ReapOrphans(); err != nil || killed != 1 {
		t.Fatalf("ReapOrphans = %d, %v; want 1, nil", killed, err)
	}
	testenv.WaitFor(t, "orphaned agent gone", 5*time.Second, func() bool { return processGone(r.PID) })
	testenv.WaitFor(t, "orphan's grandchild gone", 5*time.Second, func() bool { return processGone(grandchild) })
	if processGone(stranger) {
		t.Fatal("ReapOrphans killed a process in the orphan's group that does not carry its marker")
	}
}
