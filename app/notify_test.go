package app

import (
	"slices"
	"testing"

	"codehydra/workspace"
)

func TestAgentNoticesTellFinishedAndNeedsInput(t *testing.T) {
	ws := workspace.Workspace{Name: "feat", Path: "/wt/feat", ProjectPath: "/src/proj"}
	idleNoSessions := workspace.AgentStatus{Type: workspace.AgentNone, State: workspace.AgentStateReady}
	tests := []struct {
		name       string
		prev, next workspace.AgentStatus
		want       []string
	}{
		{"busy to idle finished", agentBusy, agentIdle, []string{NoticeFinished}},
		{"mixed to idle finished", agentMixed, agentIdle, []string{NoticeFinished}},
		{"busy to mixed is still working", agentBusy, agentMixed, nil},
		{"idle to busy says nothing", agentIdle, agentBusy, nil},
		{"idle stays idle", agentIdle, agentIdle, nil},
		{"busy to asking", agentBusy, agentInput, []string{NoticeNeedsInput}},
		{"a second question", agentInput, withInput(agentInput, 2), []string{NoticeNeedsInput}},
		{"answered question says nothing", withInput(agentInput, 2), agentInput, nil},
		{"asking to idle: answered, then done", agentInput, agentIdle, []string{NoticeFinished}},
		{"busy to failed is no finish", agentBusy, agentFailed, nil},
		{"busy to stopped is no finish", agentBusy, workspace.NoAgent, nil},
		{"busy to ready without sessions is no finish", agentBusy, idleNoSessions, nil},
		{"first report of an idle agent", workspace.NoAgent, agentIdle, nil},
		{"retrying to idle: gave up, no answer", agentRetrying, agentIdle, []string{NoticeGaveUp}},
		{"retrying to busy says nothing", agentRetrying, agentBusy, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, n := range AgentNotices(ws, tt.prev, tt.next) {
				got = append(got, n.Title)
				if n.Content == "" {
					t.Error("notice without content")
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("notices = %q, want %q", got, tt.want)
			}
		})
	}
}

func withInput(a workspace.AgentStatus, n int) workspace.AgentStatus {
	a.NeedsInput = n
	return a
}
