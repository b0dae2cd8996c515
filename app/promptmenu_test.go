package app

import (
	"errors"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"codehydra/workspace"
)

// queuedPrompt is a first prompt given to fakeAgents, and what it answers
// PromptDelivery with.
type queuedPrompt struct {
	prompt   workspace.FirstPrompt
	delivery workspace.PromptDelivery
}

// refuseQueue, when set in fakeAgents.prompts under "", makes QueuePrompt fail.
const refuseQueue = ""

func (a *fakeAgents) QueuePrompt(path string, p workspace.FirstPrompt) (workspace.PromptDelivery, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.prompts == nil {
		a.prompts = map[string]queuedPrompt{}
	}
	if _, refuse := a.prompts[refuseQueue]; refuse {
		return workspace.PromptDelivery{}, errors.New("the agents are not set up yet; the prompt was not kept")
	}
	d := workspace.PromptDelivery{State: workspace.DeliveryPending}
	a.prompts[path] = queuedPrompt{prompt: p, delivery: d}
	return d, nil
}

func (a *fakeAgents) PromptDelivery(path string) (workspace.PromptDelivery, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	q, ok := a.prompts[path]
	return q.delivery, ok
}

// setDelivery changes what became of the first prompt of path.
func (a *fakeAgents) setDelivery(path string, d workspace.PromptDelivery) {
	a.mu.Lock()
	defer a.mu.Unlock()
	q := a.prompts[path]
	q.delivery = d
	a.prompts[path] = q
}

// queued is the first prompt given for path.
func (a *fakeAgents) queued(path string) (workspace.FirstPrompt, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	q, ok := a.prompts[path]
	return q.prompt, ok
}

func TestCreateDialogRefusesAFirstPromptOverTheLimitAsItIsTyped(t *testing.T) {
	f := newFake()
	f.addWorkspace("proj", "a")
	h := newHarness(t, Deps{Workspaces: f, Agents: newFakeAgents()})
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
func createChild(t *testing.T) (*harness, *fakeAgents, *createDialog) {
	t.Helper()
	f := newFake()
	f.addWorkspace("proj", "a")
	agents := newFakeAgents()
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
	got, ok := agents.queued(ws.Path)
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
	agents.mu.Lock()
	agents.prompts = map[string]queuedPrompt{refuseQueue: {}}
	agents.mu.Unlock()
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
		f := newFake()
		f.addWorkspace("proj", "a")
		h := newHarness(t, Deps{Workspaces: f, Agents: newFakeAgents()})
		d := openCreateLoaded(t, h)
		focus := d.prompt
		if which == "agent" {
			focus = d.agent
		}
		d.win.Canvas().Focus(focus)
		pressEscape(d.win)
		if h.windowOpen("New workspace") {
			t.Errorf("Escape in the %s field left the window open", which)
		}
	}
}

func TestTrayShowsAFirstPromptWaitingThenNotDelivered(t *testing.T) {
	f, ws, agents := oneWorkspace(agentIdle)
	if _, err := agents.QueuePrompt(ws.Path, workspace.FirstPrompt{Prompt: "go"}); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Deps{Workspaces: f, Agents: agents})
	h.startTray()
	entry := "○ feat (idle)"
	h.waitFor("the waiting prompt", func() bool { return find(h.view.menu(), entry, LabelPromptPending) != nil })

	why := "the agent failed before it was ready: opencode exited (status 1)"
	agents.setDelivery(ws.Path, workspace.PromptDelivery{State: workspace.DeliveryFailed, Error: why})
	f.Publish(workspace.Event{Kind: workspace.EventAgentChanged, Workspace: ws})
	want := PromptFailedPrefix + why
	h.waitFor("the failed delivery", func() bool { return find(h.view.menu(), entry, want) != nil })
	if it := find(h.view.menu(), entry, want); !it.Disabled {
		t.Error("the reason is a clickable item")
	}

	agents.setDelivery(ws.Path, workspace.PromptDelivery{State: workspace.DeliveryDelivered, SessionID: "ses_1"})
	f.Publish(workspace.Event{Kind: workspace.EventAgentChanged, Workspace: ws})
	h.waitFor("a delivered prompt to say nothing", func() bool {
		sub := find(h.view.menu(), entry)
		return sub != nil && sub.ChildMenu.Items[0].Label == LabelOpenAgent
	})
}

func TestPromptLineFitsOneMenuLine(t *testing.T) {
	long := strings.Repeat("word ", 60)
	got := PromptLine(workspace.PromptDelivery{State: workspace.DeliveryFailed, Error: "a\nb  " + long})
	if strings.Contains(got, "\n") || len([]rune(got)) > len([]rune(PromptFailedPrefix))+maxTroubleLen || !strings.HasSuffix(got, "…") {
		t.Errorf("PromptLine = %q, want one cut line", got)
	}
	if got := PromptLine(workspace.PromptDelivery{}); got != "" {
		t.Errorf("no prompt gives %q", got)
	}
}
