package opencode

import (
	"encoding/json"
	"reflect"
	"testing"

	"codehydra/workspace"
)

func ev(t *testing.T, typ string, props any) Event {
	t.Helper()
	b, err := json.Marshal(props)
	if err != nil {
		t.Fatal(err)
	}
	return Event{Type: typ, Properties: b}
}

func status(sid, typ string) map[string]any {
	return map[string]any{"sessionID": sid, "status": map[string]any{"type": typ}}
}

// retryNext is the next try of the retry statuses the tests make, as
// opencode gives it: Unix milliseconds.
const retryNext = 1767225600123

// retry is opencode's session.status of a session that retries a failed
// model request (opencode 1.18's SessionStatus "retry").
func retry(sid string, attempt int, message string) map[string]any {
	return map[string]any{"sessionID": sid, "status": map[string]any{
		"type": "retry", "attempt": attempt, "message": message, "next": retryNext}}
}

// perm and quest are the requests the tracker makes of permission.asked
// and question.asked events that say no more than their ID and session.
func perm(id, sid string) workspace.PendingRequest {
	return workspace.PendingRequest{ID: id, SessionID: sid, Kind: workspace.RequestPermission}
}

func quest(id, sid string) workspace.PendingRequest {
	return workspace.PendingRequest{ID: id, SessionID: sid, Kind: workspace.RequestQuestion, Tool: "question"}
}

func TestTrackerSummarisesSessions(t *testing.T) {
	type step struct {
		typ   string
		props any
	}
	created := func(id, parent string) step {
		info := map[string]any{"id": id}
		if parent != "" {
			info["parentID"] = parent
		}
		return step{EventSessionCreated, map[string]any{"sessionID": id, "info": info}}
	}
	tests := []struct {
		name  string
		steps []step
		want  SessionSummary
	}{
		{"no sessions", nil, SessionSummary{Type: workspace.AgentNone}},
		{"a new session is idle", []step{created("s1", "")},
			SessionSummary{Type: workspace.AgentIdle, Counts: workspace.AgentCounts{Idle: 1, Total: 1}}},
		{"busy", []step{created("s1", ""), {EventSessionStatus, status("s1", "busy")}},
			SessionSummary{Type: workspace.AgentBusy, Counts: workspace.AgentCounts{Busy: 1, Total: 1}}},
		{"retry counts as busy, and as retrying", []step{{EventSessionStatus, status("s1", "retry")}},
			SessionSummary{Type: workspace.AgentBusy, Counts: workspace.AgentCounts{Busy: 1, Total: 1}, Retry: workspace.AgentRetry{Sessions: 1}}},
		{"retry keeps opencode's attempt, message and next try", []step{{EventSessionStatus, retry("s1", 3, "Cannot connect to API")}},
			SessionSummary{Type: workspace.AgentBusy, Counts: workspace.AgentCounts{Busy: 1, Total: 1},
				Retry: workspace.AgentRetry{Sessions: 1, Attempt: 3, Message: "Cannot connect to API", Next: retryNext}}},
		{"busy again ends retrying", []step{{EventSessionStatus, retry("s1", 1, "Cannot connect to API")}, {EventSessionStatus, status("s1", "busy")}},
			SessionSummary{Type: workspace.AgentBusy, Counts: workspace.AgentCounts{Busy: 1, Total: 1}}},
		{"session.idle ends retrying", []step{{EventSessionStatus, retry("s1", 1, "x")}, {EventSessionIdle, map[string]any{"sessionID": "s1"}}},
			SessionSummary{Type: workspace.AgentIdle, Counts: workspace.AgentCounts{Idle: 1, Total: 1}}},
		{"the session that tried most speaks for all", []step{{EventSessionStatus, retry("s1", 2, "two")},
			{EventSessionStatus, retry("s2", 5, "five")}, {EventSessionStatus, retry("s3", 5, "five too")}},
			SessionSummary{Type: workspace.AgentBusy, Counts: workspace.AgentCounts{Busy: 3, Total: 3},
				Retry: workspace.AgentRetry{Sessions: 3, Attempt: 5, Message: "five", Next: retryNext}}},
		{"a subagent's retry stalls the turn too", []step{created("s1", ""), {EventSessionStatus, status("s1", "busy")},
			created("child", "s1"), {EventSessionStatus, retry("child", 2, "Cannot connect to API")}},
			SessionSummary{Type: workspace.AgentBusy, Counts: workspace.AgentCounts{Busy: 1, Total: 1},
				Retry: workspace.AgentRetry{Sessions: 1, Attempt: 2, Message: "Cannot connect to API", Next: retryNext}}},
		{"busy then idle", []step{{EventSessionStatus, status("s1", "busy")}, {EventSessionStatus, status("s1", "idle")}},
			SessionSummary{Type: workspace.AgentIdle, Counts: workspace.AgentCounts{Idle: 1, Total: 1}}},
		{"session.idle ends busy", []step{{EventSessionStatus, status("s1", "busy")}, {EventSessionIdle, map[string]any{"sessionID": "s1"}}},
			SessionSummary{Type: workspace.AgentIdle, Counts: workspace.AgentCounts{Idle: 1, Total: 1}}},
		{"mixed", []step{{EventSessionStatus, status("s1", "busy")}, created("s2", "")},
			SessionSummary{Type: workspace.AgentMixed, Counts: workspace.AgentCounts{Idle: 1, Busy: 1, Total: 2}}},
		{"a subagent's session is not counted", []step{created("s1", ""), {EventSessionStatus, status("s1", "busy")},
			created("child", "s1"), {EventSessionStatus, status("child", "busy")}},
			SessionSummary{Type: workspace.AgentBusy, Counts: workspace.AgentCounts{Busy: 1, Total: 1}}},
		{"deleted sessions are forgotten", []step{created("s1", ""), {EventSessionStatus, status("s1", "busy")},
			{EventPermissionAsked, map[string]any{"id": "per_1", "sessionID": "s1"}},
			{EventSessionDeleted, map[string]any{"sessionID": "s1", "info": map[string]any{"id": "s1"}}}},
			SessionSummary{Type: workspace.AgentNone}},
		{"a permission asked needs input", []step{{EventSessionStatus, status("s1", "busy")},
			{EventPermissionAsked, map[string]any{"id": "per_1", "sessionID": "s1"}}},
			SessionSummary{Type: workspace.AgentBusy, Counts: workspace.AgentCounts{Busy: 1, Total: 1}, NeedsInput: 1,
				Requests: []workspace.PendingRequest{perm("per_1", "s1")}}},
		{"a permission replied needs none", []step{{EventSessionStatus, status("s1", "busy")},
			{EventPermissionAsked, map[string]any{"id": "per_1", "sessionID": "s1"}},
			{EventPermissionReplied, map[string]any{"sessionID": "s1", "requestID": "per_1", "reply": "once"}}},
			SessionSummary{Type: workspace.AgentBusy, Counts: workspace.AgentCounts{Busy: 1, Total: 1}}},
		{"two requests in one session count once", []step{
			{EventQuestionAsked, map[string]any{"id": "que_1", "sessionID": "s1"}},
			{EventPermissionAsked, map[string]any{"id": "per_1", "sessionID": "s1"}},
			{EventQuestionAsked, map[string]any{"id": "que_2", "sessionID": "s2"}}},
			SessionSummary{Type: workspace.AgentNone, NeedsInput: 2,
				Requests: []workspace.PendingRequest{perm("per_1", "s1"), quest("que_1", "s1"), quest("que_2", "s2")}}},
		{"questions replied or rejected", []step{
			{EventQuestionAsked, map[string]any{"id": "que_1", "sessionID": "s1"}},
			{EventQuestionAsked, map[string]any{"id": "que_2", "sessionID": "s2"}},
			{EventQuestionReplied, map[string]any{"sessionID": "s1", "requestID": "que_1", "answers": []any{}}},
			{EventQuestionRejected, map[string]any{"sessionID": "s2", "requestID": "que_2"}}},
			SessionSummary{Type: workspace.AgentNone}},
		{"v2 names count too", []step{
			{"permission.v2.asked", map[string]any{"id": "per_1", "sessionID": "s1"}},
			{"question.v2.asked", map[string]any{"id": "que_1", "sessionID": "s2"}},
			{"question.v2.rejected", map[string]any{"sessionID": "s2", "requestID": "que_1"}}},
			SessionSummary{Type: workspace.AgentNone, NeedsInput: 1, Requests: []workspace.PendingRequest{perm("per_1", "s1")}}},
		{"unknown status and events are ignored", []step{{EventSessionStatus, status("s1", "sleeping")},
			{"message.part.updated", map[string]any{"sessionID": "s1"}}, {EventSessionStatus, map[string]any{}}},
			SessionSummary{Type: workspace.AgentNone}},
		{"an update of an unseen session does not count it", []step{{EventSessionUpdated, map[string]any{"sessionID": "old", "info": map[string]any{"id": "old"}}}},
			SessionSummary{Type: workspace.AgentNone}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewTracker()
			for _, s := range tt.steps {
				tr.Apply(ev(t, s.typ, s.props))
			}
			if got := tr.Summary(); !got.equal(tt.want) {
				t.Errorf("summary = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestTrackerApplyReportsChanges(t *testing.T) {
	tr := NewTracker()
	if changed, _ := tr.Apply(ev(t, EventSessionStatus, status("s1", "busy"))); !changed {
		t.Error("first busy: changed = false")
	}
	if changed, _ := tr.Apply(ev(t, EventSessionStatus, status("s1", "busy"))); changed {
		t.Error("busy again: changed = true")
	}
	if changed, resync := tr.Apply(Event{Type: EventInstanceDisposed, Properties: json.RawMessage(`{"directory":"/x"}`)}); changed || !resync {
		t.Errorf("instance disposed: changed, resync = %v, %v; want false, true", changed, resync)
	}
}

func TestTrackerResyncCatchesUpWithMissedEvents(t *testing.T) {
	tr := NewTracker()
	tr.Apply(ev(t, EventSessionStatus, status("s1", "busy")))
	tr.Apply(ev(t, EventPermissionAsked, map[string]any{"id": "per_1", "sessionID": "s1"}))
	// Meanwhile s1 finished, s2 and a child started, and s2 asks a question.
	changed := tr.Resync(Snapshot{
		Status:   map[string]string{"s2": "busy", "child": "busy"},
		Pending:  []workspace.PendingRequest{quest("que_1", "s2")},
		Children: map[string]bool{"child": true},
	})
	if !changed {
		t.Error("Resync reported no change")
	}
	want := SessionSummary{Type: workspace.AgentMixed, Counts: workspace.AgentCounts{Idle: 1, Busy: 1, Total: 2}, NeedsInput: 1,
		Requests: []workspace.PendingRequest{quest("que_1", "s2")}}
	if got := tr.Summary(); !got.equal(want) {
		t.Errorf("summary = %+v, want %+v", got, want)
	}
	// A retry seen only in a snapshot carries its details too.
	tr.Resync(Snapshot{Status: map[string]string{"s2": "retry"},
		Retry: map[string]workspace.AgentRetry{"s2": {Attempt: 4, Message: "Cannot connect to API", Next: retryNext}}})
	wantRetry := workspace.AgentRetry{Sessions: 1, Attempt: 4, Message: "Cannot connect to API", Next: retryNext}
	if got := tr.Summary(); got.Retry != wantRetry || got.Counts.Busy != 1 {
		t.Errorf("summary after a snapshot with a retry = %+v, want busy 1 and retry %+v", got, wantRetry)
	}
	if !tr.Knows("child") || tr.Knows("nobody") {
		t.Error("Knows is wrong")
	}
	if !tr.Reset() || !tr.Summary().equal(SessionSummary{Type: workspace.AgentNone}) {
		t.Errorf("after Reset: %+v", tr.Summary())
	}
}

func TestTrackerKeepsWhatARequestAsksFor(t *testing.T) {
	tr := NewTracker()
	// opencode 1.18's permission.asked and question.asked, as its API
	// describes them (PermissionRequest, QuestionRequest).
	tr.Apply(ev(t, EventPermissionAsked, map[string]any{
		"id": "per_2", "sessionID": "ses_1", "permission": "bash", "patterns": []string{"rm -rf build"},
		"always": []string{"rm *"}, "metadata": map[string]any{}, "tool": map[string]any{"messageID": "msg_1", "callID": "c1"}}))
	tr.Apply(ev(t, EventQuestionAsked, map[string]any{
		"id": "que_1", "sessionID": "ses_2", "questions": []any{
			map[string]any{"question": "Which colour?", "header": "Colour", "options": []any{
				map[string]any{"label": "red", "description": "warm"}, map[string]any{"label": "blue", "description": "cold"}}},
			map[string]any{"question": "Which sizes?", "header": "Size", "multiple": true, "custom": false, "options": []any{
				map[string]any{"label": "S", "description": ""}}}}}))
	tr.Apply(ev(t, "permission.v2.asked", map[string]any{
		"id": "per_3", "sessionID": "ses_1", "action": "edit", "resources": []string{"main.go"}, "save": []string{"*"},
		"metadata": map[string]any{"filepath": "/w/main.go"}}))
	want := []workspace.PendingRequest{
		{ID: "per_2", SessionID: "ses_1", Kind: workspace.RequestPermission, Tool: "bash", Summary: "rm -rf build",
			Patterns: []string{"rm -rf build"}, Always: []string{"rm *"}},
		{ID: "per_3", SessionID: "ses_1", Kind: workspace.RequestPermission, Tool: "edit", Summary: "/w/main.go",
			Patterns: []string{"main.go"}, Always: []string{"*"}},
		{ID: "que_1", SessionID: "ses_2", Kind: workspace.RequestQuestion, Tool: "question", Summary: "Which colour? (and 1 more)",
			Questions: []workspace.PendingQuestion{
				{Header: "Colour", Text: "Which colour?", Options: []string{"red", "blue"}, Descriptions: []string{"warm", "cold"}, Custom: true},
				{Header: "Size", Text: "Which sizes?", Options: []string{"S"}, Descriptions: []string{""}, Multiple: true}}},
	}
	got := tr.Summary()
	if !reflect.DeepEqual(got.Requests, want) || got.NeedsInput != 2 {
		t.Errorf("requests = %+v (needs input %d),\nwant %+v (2)", got.Requests, got.NeedsInput, want)
	}
	tr.Apply(ev(t, EventPermissionReplied, map[string]any{"sessionID": "ses_1", "requestID": "per_2", "reply": "once"}))
	if got := tr.Summary().Requests; len(got) != 2 || got[0].ID != "per_3" {
		t.Errorf("after per_2 was answered: %+v, want per_3 and que_1", got)
	}
}
