package gateway

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"codehydra/internal/reap"
	"codehydra/internal/settings"
	"codehydra/internal/testenv"
)

// These tests pin that the gateway leaves no server process behind after
// CodeHydra is killed, and that reaping kills only what carries a
// recorded server's marker. Records are written and read as plain JSON.

// gone reports whether pid has ended (a zombie has).
func gone(pid int) bool {
	_, err := reap.StartTime(pid)
	return err != nil
}

func killAtCleanup(t *testing.T, pid int) {
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
}

func serverRecords(t *testing.T, dir string) []serverRecord {
	t.Helper()
	recs, bad, err := reap.ReadRecords[serverRecord](dir)
	if err != nil || len(bad) > 0 {
		t.Fatalf("read records: %v, bad files %v", err, bad)
	}
	return recs
}

// reapWith runs a new gateway on the records in dir and waits until it
// has reaped.
func reapWith(t *testing.T, dir string) {
	t.Helper()
	g := New(Options{RecordsDir: dir, StopTimeout: 300 * time.Millisecond})
	t.Cleanup(func() { _ = g.Close() })
	select {
	case <-g.reaped:
	case <-time.After(20 * time.Second):
		t.Fatal("the gateway did not finish reaping")
	}
}

func TestAKilledCodeHydrasServerLeavesNothingBehindAfterTheNextStart(t *testing.T) {
	every := testenv.RealMCPServer(t, "mcp-server-everything")
	dir := t.TempDir()
	records, pidFile := filepath.Join(dir, "records"), filepath.Join(dir, "grandchild.pid")
	// The server starts a helper that ignores SIGTERM and never reads its
	// input, as a server run through a wrapper may, then becomes the real
	// server-everything.
	script := `(trap "" TERM HUP; exec sleep 600) </dev/null >/dev/null 2>&1 & echo $! >"$1"; exec "$2"`
	app := testenv.StartReadyApp(t, crashingAppEnv, crashingAppSpec{RecordsDir: records,
		Server: settings.MCPServer{Command: "sh", Args: []string{"-c", script, "sh", pidFile, every}}})
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	grandchild, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	killAtCleanup(t, grandchild)
	recs := serverRecords(t, records)
	if len(recs) != 1 {
		t.Fatalf("records = %+v, want the server's", recs)
	}
	r := recs[0]
	if pgid, err := syscall.Getpgid(grandchild); err != nil || pgid != r.PGID || r.PGID != r.PID || r.Server != "leaky" ||
		r.ServerID == "" || r.StartTime == 0 || r.OwnerPID != app.Process.Pid {
		t.Fatalf("record = %+v; the helper's group %d, %v", r, pgid, err)
	}

	if err := app.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = app.Wait()
	testenv.WaitFor(t, "the server to end with its app", 10*time.Second, func() bool { return gone(r.PID) })
	if gone(grandchild) {
		t.Fatal("the server's helper died with the app; the test proves nothing")
	}

	reapWith(t, records)
	testenv.WaitFor(t, "the server's helper reaped", 5*time.Second, func() bool { return gone(grandchild) })
	if recs := serverRecords(t, records); len(recs) != 0 {
		t.Errorf("records left: %+v", recs)
	}
}

func TestReapingLeavesAProcessWithoutTheRecordedMarkerAlive(t *testing.T) {
	for _, tc := range []struct{ name, env string }{
		{"no marker", ""},
		{"another server's marker", MarkerEnv + "=someone-else"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			records := t.TempDir()
			// A process of this boot with the recorded pid, group and start
			// time and a dead owner: all a record can say, but not the marker.
			stranger := exec.Command("sleep", "60")
			stranger.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			stranger.Env = append(os.Environ(), tc.env)
			if err := stranger.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = stranger.Process.Kill()
				_ = stranger.Wait()
			})
			pid := stranger.Process.Pid
			start, err := reap.StartTime(pid)
			if err != nil {
				t.Fatal(err)
			}
			rec := map[string]any{"pid": pid, "pgid": pid, "server": "x", "bootId": reap.BootID(), "startTime": start,
				"serverId": "the-server-that-was-here", "ownerPid": 999999}
			if err := reap.WriteRecord(records, pid, rec); err != nil {
				t.Fatal(err)
			}

			reapWith(t, records)
			if gone(pid) {
				t.Fatal("reaping killed a process that does not carry the recorded server's marker")
			}
			if recs := serverRecords(t, records); len(recs) != 0 {
				t.Errorf("records left: %+v", recs)
			}
		})
	}
}

func TestAServerIsRecordedWhileItRunsWithItsMarker(t *testing.T) {
	every := testenv.RealMCPServer(t, "mcp-server-everything")
	records := t.TempDir()
	g := New(Options{RecordsDir: records, Servers: map[string]settings.MCPServer{"every": {Command: every}}})
	t.Cleanup(func() { _ = g.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if len(g.Tools(ctx)) == 0 {
		t.Fatalf("no tools: %+v", g.Statuses())
	}
	recs := serverRecords(t, records)
	if len(recs) != 1 {
		t.Fatalf("records = %+v, want one", recs)
	}
	env, err := os.ReadFile("/proc/" + strconv.Itoa(recs[0].PID) + "/environ")
	if err != nil || !slices.Contains(strings.Split(string(env), "\x00"), MarkerEnv+"="+recs[0].ServerID) {
		t.Fatalf("the recorded process does not carry the recorded marker (%v)", err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if recs := serverRecords(t, records); len(recs) != 0 {
		t.Errorf("records left after Close: %+v", recs)
	}
}
