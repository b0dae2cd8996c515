package app

import (
	"strings"
	"testing"

	"codehydra/app/internal/uitest"
	"codehydra/workspace"
)

func TestTrayShowsAFirstPromptWaitingThenNotDelivered(t *testing.T) {
	f, ws, agents := uitest.OneWorkspace(uitest.AgentIdle)
	if _, err := agents.QueuePrompt(ws.Path, workspace.FirstPrompt{Prompt: "go"}); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Deps{Workspaces: f, Agents: agents})
	h.startTray()
	entry := "○ feat (idle)"
	h.waitFor("the waiting prompt", func() bool { return find(h.view.menu(), entry, LabelPromptPending) != nil })

	why := "the agent failed before it was ready: opencode exited (status 1)"
	agents.SetDelivery(ws.Path, workspace.PromptDelivery{State: workspace.DeliveryFailed, Error: why})
	f.Publish(workspace.Event{Kind: workspace.EventAgentChanged, Workspace: ws})
	want := PromptFailedPrefix + why
	h.waitFor("the failed delivery", func() bool { return find(h.view.menu(), entry, want) != nil })
	if it := find(h.view.menu(), entry, want); !it.Disabled {
		t.Error("the reason is a clickable item")
	}

	agents.SetDelivery(ws.Path, workspace.PromptDelivery{State: workspace.DeliveryDelivered, SessionID: "ses_1"})
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
