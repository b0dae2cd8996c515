//go:build unix

package opencode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"codehydra/internal/sandbox"
	"codehydra/internal/testenv"
	"codehydra/workspace"
)

func TestAnAgentThatMustBeConfinedAndCannotBeDoesNotStartAndSaysWhy(t *testing.T) {
	f := newFixture(t)
	startsFile := filepath.Join(f.dir, "starts")
	f.env = append(f.env, "FAKEOC_STARTS_FILE="+startsFile)
	o := f.options()
	why := errors.New(`not confined: this kernel has no Landlock, and the settings require the sandbox (sandbox mode "required")`)
	o.Confine = func(context.Context, string) (sandbox.Plan, error) { return sandbox.Plan{}, why }
	s := f.start(o)
	ws := f.workspace("w")
	s.Start(ws)
	st := waitState(t, s, ws.Path, workspace.AgentStateFailed, 10*time.Second)
	if st.Detail != "not started: "+why.Error() {
		t.Errorf("detail = %q, want the reason", st.Detail)
	}
	if _, err := os.Stat(startsFile); err == nil {
		t.Error("opencode was started although it could not be confined")
	}
}

func TestTheAgentsStatusSaysWhetherItIsConfined(t *testing.T) {
	for _, tc := range []struct {
		name   string
		plan   func(ws string) sandbox.Plan
		want   func(st sandbox.Status) workspace.AgentSandbox
		enough bool // whether this system can confine at all
	}{
		{"unconfined, with the reason", func(string) sandbox.Plan {
			return sandbox.Plan{Status: sandbox.Status{Reason: "not confined: the sandbox is off in the settings"}}
		}, func(sandbox.Status) workspace.AgentSandbox {
			return workspace.AgentSandbox{Reason: "not confined: the sandbox is off in the settings"}
		}, false},
		{"confined, with the ABI the helper enforced", func(ws string) sandbox.Plan {
			pol := sandbox.Policy{Grants: []sandbox.Grant{{Path: "/", Access: sandbox.Read}, {Path: ws, Access: sandbox.Write},
				{Path: "/dev/null", Access: sandbox.Device}}}
			return sandbox.Plan{Policy: &pol, Status: sandbox.Probe()}
		}, func(st sandbox.Status) workspace.AgentSandbox { return workspace.AgentSandbox(st) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			probe := sandbox.Probe()
			if tc.enough {
				probe = testenv.RequireSandbox(t)
			}
			f := newFixture(t)
			o := f.options()
			ws := f.workspace("w")
			o.Confine = func(context.Context, string) (sandbox.Plan, error) { return tc.plan(ws.Path), nil }
			s := f.start(o)
			s.Start(ws)
			st := waitState(t, s, ws.Path, workspace.AgentStateReady, 20*time.Second)
			if want := tc.want(probe); st.Sandbox != want {
				t.Errorf("Sandbox = %+v, want %+v", st.Sandbox, want)
			}
			if tc.enough {
				status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", agentPID(t, f.agentsDir, ws.Path)))
				if err != nil || !strings.Contains(string(status), "NoNewPrivs:\t1") {
					t.Errorf("the agent's process is not under no_new_privs (%v)", err)
				}
			}
		})
	}
}
