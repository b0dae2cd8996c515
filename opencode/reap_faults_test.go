//go:build linux

package opencode

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"codehydra/internal/testenv"
)

// TestReapOrphansKillsWhatADeadAgentLeftInItsGroup pins a fix. When the
// app is killed, Linux ends each agent (Pdeathsig), but not what an agent
// started: a language server or tool stays behind in the agent's process
// group. ReapOrphans used to look at the recorded agent only, found it
// gone (or a zombie, which has no command line and so "is not opencode")
// and left the group alone, so these processes outlived every later launch.
func TestReapOrphansKillsWhatADeadAgentLeftInItsGroup(t *testing.T) {
	f := newFixture(t)
	ws := f.workspace("a")
	gcFile := filepath.Join(f.dir, "grandchild.pid")
	f.env = append(f.env, "FAKEOC_GRANDCHILD_PIDFILE="+gcFile)
	app := startCrashingApp(t, f, ws)
	recs := agentRecords(t, f.agentsDir)
	if len(recs) != 1 {
		t.Fatalf("records = %v, want one", recs)
	}
	grandchild := readPID(t, gcFile)
	t.Cleanup(func() {
		if !processGone(grandchild) {
			_ = syscall.Kill(grandchild, syscall.SIGKILL)
		}
	})

	if err := app.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = app.Wait()
	testenv.WaitFor(t, "the agent to die with its app", 5*time.Second, func() bool { return processGone(recs[0].PID) })
	if processGone(grandchild) {
		t.Fatal("the agent's child died too; the test proves nothing")
	}

	o := f.options()
	o.StopTimeout = 300 * time.Millisecond
	s := f.start(o)
	if killed, err := s.ReapOrphans(); err != nil || killed != 1 {
		t.Fatalf("ReapOrphans = %d, %v; want 1, nil", killed, err)
	}
	testenv.WaitFor(t, "the agent's child gone", 5*time.Second, func() bool { return processGone(grandchild) })
	if recs := agentRecords(t, f.agentsDir); len(recs) != 0 {
		t.Errorf("records left: %v", recs)
	}
}
