package app

import (
	"slices"
	"testing"

	"codehydra/app/internal/uitest"
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
		{"busy to idle finished", uitest.AgentBusy, uitest.AgentIdle, []string{NoticeFinished}},
		{"mixed to idle finished", uitest.AgentMixed, uitest.AgentIdle, []string{NoticeFinished}},
		{"busy to mixed is still working", uitest.AgentBusy, uitest.AgentMixed, nil},
		{"idle to busy says nothing", uitest.AgentIdle, uitest.AgentBusy, nil},
		{"idle stays idle", uitest.AgentIdle, uitest.AgentIdle, nil},
		{"busy to asking", uitest.AgentBusy, uitest.AgentInput, []string{NoticeNeedsInput}},
		{"a second question", uitest.AgentInput, withInput(uitest.AgentInput, 2), []string{NoticeNeedsInput}},
		{"answered question says nothing", withInput(uitest.AgentInput, 2), uitest.AgentInput, nil},
		{"asking to idle: answered, then done", uitest.AgentInput, uitest.AgentIdle, []string{NoticeFinished}},
		{"busy to failed is no finish", uitest.AgentBusy, uitest.AgentFailed, nil},
		{"busy to stopped is no finish", uitest.AgentBusy, workspace.NoAgent, nil},
		{"busy to ready without sessions is no finish", uitest.AgentBusy, idleNoSessions, nil},
		{"first report of an idle agent", workspace.NoAgent, uitest.AgentIdle, nil},
		{"retrying to idle: gave up, no answer", uitest.AgentRetrying, uitest.AgentIdle, []string{NoticeGaveUp}},
		{"retrying to busy says nothing", uitest.AgentRetrying, uitest.AgentBusy, nil},
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
