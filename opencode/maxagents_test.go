//go:build unix

package opencode

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"codehydra/workspace"
)

// The cap on running agents (settings maxAgents), against the fake
// opencode: real processes, real HTTP.

func TestAgentsOverMaxAgentsWaitWithAClearStatusAndStartWhenOneStops(t *testing.T) {
	f := newFixture(t)
	startsFile := filepath.Join(f.dir, "starts")
	f.env = append(f.env, "FAKEOC_STARTS_FILE="+startsFile)
	o := f.options()
	o.MaxAgents = 2
	s := f.start(o)
	var wss []workspace.Workspace
	for i := range 4 {
		ws := f.workspace(fmt.Sprint("w", i))
		wss = append(wss, ws)
		s.Start(ws)
	}
	waitState(t, s, wss[0].Path, workspace.AgentStateReady, 20*time.Second)
	waitState(t, s, wss[1].Path, workspace.AgentStateReady, 20*time.Second)

	const why = "not started: 2 agents run already (maxAgents in the settings)"
	for _, ws := range wss[2:] {
		st := s.AgentStatus(ws.Path)
		if st.State != workspace.AgentStateFailed || !strings.Contains(st.Detail, why) {
			t.Fatalf("agent over the cap: %+v, want failed saying %q", st, why)
		}
		if !slices.ContainsFunc(f.changes.published(ws.Path), func(p workspace.AgentStatus) bool { return p.Detail == st.Detail }) {
			t.Errorf("the status of %s was not announced to OnChange (the tray would not show it)", ws.Name)
		}
	}
	// Asking again changes nothing while the cap is reached.
	s.Start(wss[2])
	if err := s.Restart(wss[2].Path); err != nil {
		t.Fatal(err)
	}
	if st := s.AgentStatus(wss[2].Path); st.State != workspace.AgentStateFailed {
		t.Fatalf("a restart over the cap: %+v", st)
	}
	if n := len(starts(t, startsFile)); n != 2 {
		t.Fatalf("%d opencode processes started with maxAgents 2", n)
	}

	// A waiting agent whose workspace goes leaves the queue; when a running
	// one stops, the next waiting one (w3) starts.
	ctx := context.Background()
	if err := s.StopAgent(ctx, wss[2].Path); err != nil {
		t.Fatal(err)
	}
	if err := s.StopAgent(ctx, wss[0].Path); err != nil {
		t.Fatal(err)
	}
	waitState(t, s, wss[3].Path, workspace.AgentStateReady, 20*time.Second)
	if st := s.AgentStatus(wss[2].Path); st.State != workspace.AgentStateNone {
		t.Errorf("the stopped waiting agent reports %+v", st)
	}
	if n := len(starts(t, startsFile)); n != 3 {
		t.Fatalf("%d opencode processes started, want 3 (w0, w1, then w3)", n)
	}
	if !healthy(t, s, wss[3].Path) {
		t.Error("the agent that waited is not serving")
	}
}
