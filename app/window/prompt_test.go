package window

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"codehydra/app/internal/uitest"
	"codehydra/workspace"
)

func TestCreateDialogRefusesAFirstPromptOverTheLimitAsItIsTyped(t *testing.T) {
	f := uitest.NewWorkspaces()
	f.AddWorkspace("proj", "a")
	h := newHarness(t, Deps{Workspaces: f, Agents: uitest.NewAgents()})
	d := openCreateLoaded(t, h)
	test.Type(d.name, "child")
	// Lines of words, as a pasted task would be.
	task := strings.Repeat("Fix the login bug, then run the tests.\n", workspace.MaxFirstPrompt/39+1)
	tests := []struct {
		name, prompt, agent string
		wantErr             string // under the prompt, or the agent if agent is set
	}{
		{"no prompt", "", "", ""},
		{"at the limit", task[:workspace.MaxFirstPrompt], "", ""},
		{"one byte over", task[:workspace.MaxFirstPrompt+1], "", "more than the 65536 allowed"},
		{"over, as UTF-8", strings.Repeat("Änderung übernehmen.\n", 3000), "", "has 69000 bytes"},
		{"an agent of the project", "go", "reviewer", ""},
		{"no agent name", "go", "../x", "is no opencode agent name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d.agent.SetText(tt.agent)
			d.prompt.SetText("")
			// Typed, not set, where it is short: the reason follows the keys.
			if len(tt.prompt) < 100 {
				test.Type(d.prompt, tt.prompt)
			} else {
				d.prompt.SetText(tt.prompt)
			}
			reason := d.prompt.reason
			if tt.agent != "" {
				reason = d.agent.reason
			}
			if tt.wantErr == "" && (d.prompt.reason.Visible() || d.agent.reason.Visible()) {
				t.Errorf("reasons %q / %q, want none", d.prompt.reason.Text, d.agent.reason.Text)
			}
			if tt.wantErr != "" && (!reason.Visible() || !strings.Contains(reason.Text, tt.wantErr)) {
				t.Errorf("reason = %q (shown %v), want %q", reason.Text, reason.Visible(), tt.wantErr)
			}
			if d.create.Disabled() != (tt.wantErr != "") {
				t.Errorf("Create enabled = %v with reason %q", !d.create.Disabled(), reason.Text)
			}
		})
	}
}

// createChild opens the New workspace dialog on the project proj with the
// name child typed.
func createChild(t *testing.T) (*harness, *uitest.Agents, *createDialog) {
	t.Helper()
	f := uitest.NewWorkspaces()
	f.AddWorkspace("proj", "a")
	agents := uitest.NewAgents()
	h := newHarness(t, Deps{Workspaces: f, Agents: agents})
	d := openCreateLoaded(t, h)
	test.Type(d.name, "child")
	return h, agents, d
}

func TestCreateDialogQueuesTheFirstPromptWithItsAgentForTheNewWorkspace(t *testing.T) {
	h, agents, d := createChild(t)
	test.Type(d.prompt, "Fix the login bug.\nThen run the tests.")
	// The agent comes from the field's list: build, then plan.
	test.Tap(d.agent.ActionItem.(fyne.Tappable))
	pop := d.agentMenu
	if pop == nil || len(pop.Items) != 2 || !pop.Visible() {
		t.Fatalf("the agent's list is %+v, want a menu of build and plan", pop)
	}
	test.Tap(pop.Items[1].(fyne.Tappable))
	if d.agent.Text != "plan" {
		t.Fatalf("agent = %q after picking plan", d.agent.Text)
	}
	test.Tap(d.create)
	h.waitFor("the window to close", func() bool { return !h.windowOpen("New workspace") })
	ws := workspace.Workspace{Path: "/wt/proj/child"}
	got, ok := agents.Queued(ws.Path)
	if want := (workspace.FirstPrompt{Prompt: "Fix the login bug.\nThen run the tests.", Agent: "plan"}); !ok || got != want {
		t.Errorf("queued %+v (%v) for %s, want %+v", got, ok, ws.Path, want)
	}
}

func TestCreateDialogWithoutAPromptQueuesNone(t *testing.T) {
	h, agents, d := createChild(t)
	test.Type(d.prompt, "  \n ")
	test.Tap(d.create)
	h.waitFor("the window to close", func() bool { return !h.windowOpen("New workspace") })
	if _, ok := agents.PromptDelivery("/wt/proj/child"); ok {
		t.Error("a blank prompt was queued")
	}
}

func TestCreateDialogSaysAPromptNotKeptAndKeepsIt(t *testing.T) {
	h, agents, d := createChild(t)
	agents.RefuseQueue()
	test.Type(d.prompt, "Fix it.")
	test.Tap(d.create)
	h.waitFor("the answer", func() bool { return !d.busy && d.created != nil })
	if want := "Created child, but its first prompt was not kept: the agents are not set up yet"; !strings.HasPrefix(d.status.Text, want) {
		t.Errorf("status = %q, want %q", d.status.Text, want)
	}
	if !h.windowOpen("New workspace") || d.prompt.Text != "Fix it." || d.cancel.Text != "Close" || d.create.Visible() {
		t.Error("the window must stay open with the prompt in it, Close and no Create")
	}
}

func TestCreateDialogClosesOnEscapeFromThePromptAndTheAgent(t *testing.T) {
	for _, which := range []string{"prompt", "agent"} {
		f := uitest.NewWorkspaces()
		f.AddWorkspace("proj", "a")
		h := newHarness(t, Deps{Workspaces: f, Agents: uitest.NewAgents()})
		d := openCreateLoaded(t, h)
		focus := d.prompt
		if which == "agent" {
			focus = d.agent
		}
		d.win.Canvas().Focus(focus)
		uitest.PressEscape(d.win)
		if h.windowOpen("New workspace") {
			t.Errorf("Escape in the %s field left the window open", which)
		}
	}
}
