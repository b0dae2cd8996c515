//go:build linux

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"codehydra/internal/fakemodel"
	"codehydra/internal/inhibit"
	"codehydra/internal/testenv"
	"codehydra/mcp"
)

// The built app keeps the system awake while an agent works: against a
// stand-in systemd-logind on a private system bus, the fake opencode as
// the agent of one workspace, made busy and idle through its test
// controls.

// awakeApp is serve, run with the bus at bus as its system bus, on a
// project with the workspace ws, whose agent is the fake opencode at the
// port agent.
type awakeApp struct {
	*appRun
	ws    string
	agent int
}

func launchAwake(t *testing.T, bin, fake, bus string, preventSleep bool) awakeApp {
	t.Helper()
	base := isolate(t)
	repo := testenv.GitRepo(t, "repo")
	ws := filepath.Join(t.TempDir(), "worktrees", "one")
	testenv.Git(t, repo, "worktree", "add", "-q", "-b", "one", ws)
	set, _ := json.Marshal(map[string]any{"opencodeBin": fake, "projects": []string{repo},
		"worktreeRoot": filepath.Join(base, "roots"), "preventSleep": preventSleep,
		// Every poll below is an MCP session of its own.
		"rateLimit": map[string]any{"perSecond": 1000, "burst": 1000}})
	testenv.WriteSettings(t, string(set))
	app := launch(t, bin, append(os.Environ(), "DBUS_SYSTEM_BUS_ADDRESS="+bus))
	app.agentsReady(t, []string{ws})
	raw, err := app.call(t, ws, mcp.ToolGetOpencodePort, nil)
	var port int
	if err != nil || json.Unmarshal(raw, &port) != nil || port == 0 {
		t.Fatalf("the agent's port: %s, %v", raw, err)
	}
	return awakeApp{app, ws, port}
}

// agentStatus is the part of workspace_get_status these tests read.
type agentStatus struct {
	Type       string
	NeedsInput int
	Retry      struct{ Sessions int }
}

// emit makes the agent send the event typ, and waits until the app's
// status of it satisfies seen.
func (a awakeApp) emit(t *testing.T, typ string, props map[string]any, seen func(agentStatus) bool) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"type": typ, "properties": props})
	resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/fake/emit", a.agent), "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	a.poll(t, "the app to see "+typ, func() bool {
		raw, err := a.call(t, a.ws, mcp.ToolGetStatus, nil)
		var st struct{ Agent agentStatus }
		return err == nil && json.Unmarshal(raw, &st) == nil && seen(st.Agent)
	})
}

// work makes the agent's session busy or idle.
func (a awakeApp) work(t *testing.T, busy bool) {
	t.Helper()
	typ := map[bool]string{true: "busy", false: "idle"}[busy]
	a.emit(t, "session.status", map[string]any{"sessionID": "ses_awake", "status": map[string]any{"type": typ}},
		func(st agentStatus) bool { return st.Type == typ })
}

func TestTheAppKeepsTheSystemAwakeWhileAnAgentWorks(t *testing.T) {
	bin, fake := buildApp(t)
	want := testenv.Inhibitor{What: "sleep:idle", Who: "CodeHydra", Why: "1 agent working", Mode: "block"}
	heldOne := func(l *testenv.Logind) func() bool {
		return func() bool { h := l.Held(); return len(h) == 1 && h[0] == want }
	}

	t.Run("held while busy or retrying, released when idle, waiting for an answer, and at quit", func(t *testing.T) {
		bus := testenv.PrivateBus(t)
		l := testenv.WatchLogind(t, bus)
		l.Serve(t)
		app := launchAwake(t, bin, fake, bus, true)

		released := func() bool { return len(l.Held()) == 0 }
		app.work(t, true)
		app.poll(t, "an inhibitor while the agent is busy", heldOne(l))
		app.work(t, false)
		app.poll(t, "the inhibitor released once the agent is idle", released)

		// Busy, but waiting for the user's answer, it does not work.
		app.work(t, true)
		app.poll(t, "an inhibitor while the agent is busy again", heldOne(l))
		app.emit(t, "permission.asked", map[string]any{"id": "per_awake", "sessionID": "ses_awake", "permission": "bash"},
			func(st agentStatus) bool { return st.NeedsInput == 1 })
		app.poll(t, "the inhibitor released while the agent waits for an answer", released)
		app.emit(t, "permission.replied", map[string]any{"requestID": "per_awake", "sessionID": "ses_awake", "reply": "once"},
			func(st agentStatus) bool { return st.NeedsInput == 0 && st.Type == "busy" })
		app.poll(t, "an inhibitor once the answer came", heldOne(l))

		// Retrying a model request is work too.
		app.work(t, false)
		app.poll(t, "the inhibitor released once the agent is idle again", released)
		app.emit(t, "session.status", map[string]any{"sessionID": "ses_awake", "status": map[string]any{
			"type": "retry", "attempt": 1, "message": "Cannot connect to API", "next": 0}},
			func(st agentStatus) bool { return st.Retry.Sessions == 1 })
		app.poll(t, "an inhibitor while the agent retries", heldOne(l))

		app.stop(t)
		testenv.WaitFor(t, "the inhibitor released at quit", 10*time.Second, released)
		if ins := l.Inhibitors(); len(ins) != 4 {
			t.Fatalf("inhibitors %+v, want 4", ins)
		}
		// Released by the shutdown, not only by the exit that closes
		// every descriptor anyway.
		if _, after, _ := strings.Cut(app.out.String(), "shutting down"); !strings.Contains(after, "the system may sleep again: CodeHydra stops") {
			t.Errorf("the shutdown did not release the inhibitor:\n%s", app.out)
		}
	})

	t.Run("none with preventSleep off", func(t *testing.T) {
		bus := testenv.PrivateBus(t)
		l := testenv.WatchLogind(t, bus)
		l.Serve(t)
		app := launchAwake(t, bin, fake, bus, false)
		app.work(t, true)
		// Absence takes a wait: twice the time after which the guard
		// would have asked.
		time.Sleep(2 * inhibit.DefaultSettle)
		if n := l.Calls(); n != 0 {
			t.Fatalf("%d Inhibit calls with preventSleep off, want 0", n)
		}
		if !strings.Contains(app.out.String(), "preventSleep is off") {
			t.Errorf("the log does not say that preventSleep is off:\n%s", app.out)
		}
		app.stop(t)
	})

	t.Run("a missing logind is logged once and the app goes on", func(t *testing.T) {
		bus := testenv.PrivateBus(t)
		l := testenv.WatchLogind(t, bus) // nobody owns org.freedesktop.login1
		app := launchAwake(t, bin, fake, bus, true)
		for try := 1; try <= 2; try++ {
			app.work(t, true)
			app.poll(t, fmt.Sprintf("Inhibit call %d", try), func() bool { return l.Calls() >= try })
			app.work(t, false)
		}
		const warning = "cannot keep the system awake while agents work"
		if n := strings.Count(app.out.String(), warning); n != 1 {
			t.Fatalf("%q logged %d times, want once:\n%s", warning, n, app.out)
		}
		app.stop(t)
	})
}

// TestTheSystemStaysAwakeWhileTheRealOpencodeTakesATurn is the same
// guard with the real opencode as the agent: a turn whose model answer
// is held back keeps the stand-in logind's inhibitor taken, and the
// turn's end releases it.
func TestTheSystemStaysAwakeWhileTheRealOpencodeTakesATurn(t *testing.T) {
	oc := testenv.RealOpencode(t)
	bin := builtApp(t)
	bus := testenv.PrivateBus(t)
	l := testenv.WatchLogind(t, bus)
	l.Serve(t)
	answer := make(chan struct{})
	var once sync.Once
	answerNow := func() { once.Do(func() { close(answer) }) }
	t.Cleanup(answerNow)
	fm := &fakemodel.Server{BeforeReply: func(ctx context.Context, _ fakemodel.Request) {
		select {
		case <-answer:
		case <-ctx.Done():
		}
	}}
	modelEnv := startFakeModel(t, fm, nil, nil)

	base := isolate(t)
	repo := testenv.GitRepo(t, "repo")
	ws := filepath.Join(t.TempDir(), "worktrees", "one")
	testenv.Git(t, repo, "worktree", "add", "-q", "-b", "one", ws)
	set, _ := json.Marshal(map[string]any{"opencodeBin": oc, "projects": []string{repo},
		"worktreeRoot": filepath.Join(base, "roots"), "preventSleep": true,
		"rateLimit": map[string]any{"perSecond": 1000, "burst": 1000}})
	testenv.WriteSettings(t, string(set))
	t.Cleanup(func() { killAgents(t) })
	app := launch(t, bin, append(append(os.Environ(), "DBUS_SYSTEM_BUS_ADDRESS="+bus), modelEnv...))
	// The real opencode may take long to start on a loaded machine.
	testenv.WaitFor(t, "the real agent to be ready", 3*time.Minute, func() bool {
		port, err := app.call(t, ws, mcp.ToolGetOpencodePort, nil)
		return err == nil && string(port) != "null"
	})
	if n := l.Calls(); n != 0 {
		t.Fatalf("%d Inhibit calls before any turn, want 0", n)
	}

	promptAgent(t, agentRecord(t, ws), "Say hello")
	want := testenv.Inhibitor{What: "sleep:idle", Who: "CodeHydra", Why: "1 agent working", Mode: "block"}
	app.poll(t, "an inhibitor while the real agent's turn waits for the model", func() bool {
		h := l.Held()
		return len(h) == 1 && h[0] == want
	})
	answerNow()
	app.poll(t, "the inhibitor released once the turn ended", func() bool { return len(l.Held()) == 0 })
	app.stop(t)
	if ins := l.Inhibitors(); len(ins) != 1 {
		t.Fatalf("inhibitors %+v, want the one of the turn", ins)
	}
}
