package opencode

import (
	"maps"
	"testing"
	"time"

	"codehydra/workspace"
)

// usageZone is a zone far from UTC, so that a day told in UTC would be
// told wrong.
var usageZone = time.FixedZone("UTC-10", -10*3600)

// at is Unix milliseconds of a local time in usageZone on 2026-11-27.
func at(hour, minute int) int64 {
	return time.Date(2026, 11, 27, hour, minute, 0, 0, usageZone).UnixMilli()
}

// usageDir is the worktree of the sessions the trackers of these tests
// count.
const usageDir = "/work/repo-feat"

// tok is opencode's tokens of a session or a message.
func tok(input, output, reasoning, cacheRead, cacheWrite int64) map[string]any {
	return map[string]any{"input": input, "output": output, "reasoning": reasoning,
		"cache": map[string]any{"read": cacheRead, "write": cacheWrite}}
}

// sessionUsage is a session event of opencode 1.18 of a session in
// usageDir, whose info carries the session's running totals.
func sessionUsage(id string, cost float64, tokens map[string]any) map[string]any {
	return sessionIn(usageDir, id, cost, tokens)
}

// sessionIn is a session event of a session in dir.
func sessionIn(dir, id string, cost float64, tokens map[string]any) map[string]any {
	return map[string]any{"sessionID": id, "info": map[string]any{"id": id, "directory": dir, "cost": cost, "tokens": tokens,
		"time": map[string]any{"created": at(8, 0), "updated": at(9, 0)}}}
}

// assistant is a message.updated of an assistant message, completed at
// completed (0: not yet).
func assistant(id, session string, cost float64, tokens map[string]any, completed int64) map[string]any {
	tm := map[string]any{"created": at(0, 0)}
	if completed != 0 {
		tm["completed"] = completed
	}
	return map[string]any{"sessionID": session, "info": map[string]any{"id": id, "sessionID": session,
		"role": "assistant", "cost": cost, "tokens": tokens, "time": tm}}
}

func TestUsageTrackerFoldsSessionTotalsAndMessageDays(t *testing.T) {
	type step struct {
		typ   string
		props any
	}
	u := func(in, out int64, cost float64) workspace.AgentUsage {
		return workspace.AgentUsage{InputTokens: in, OutputTokens: out, Cost: cost}
	}
	tests := []struct {
		name      string
		steps     []step
		total     workspace.AgentUsage
		days      map[string]workspace.AgentUsage
		unchanged bool // the last step changes nothing
	}{
		{"nothing", nil, u(0, 0, 0), map[string]workspace.AgentUsage{}, false},
		{"a session's totals: input with the cache, output with reasoning",
			[]step{{EventSessionUpdated, sessionUsage("s1", 0.5, tok(10, 5, 2, 100, 7))}},
			u(117, 7, 0.5), map[string]workspace.AgentUsage{}, false},
		{"a later update of a session replaces its totals",
			[]step{{EventSessionUpdated, sessionUsage("s1", 0.5, tok(10, 5, 0, 0, 0))}, {EventSessionUpdated, sessionUsage("s1", 1.5, tok(30, 9, 0, 0, 0))}},
			u(30, 9, 1.5), map[string]workspace.AgentUsage{}, false},
		{"sessions add up, a subagent's too",
			[]step{{EventSessionCreated, sessionUsage("s1", 1, tok(10, 5, 0, 0, 0))}, {EventSessionUpdated, sessionUsage("s2", 2, tok(20, 6, 0, 0, 0))}},
			u(30, 11, 3), map[string]workspace.AgentUsage{}, false},
		{"the same totals again change nothing",
			[]step{{EventSessionUpdated, sessionUsage("s1", 1, tok(10, 5, 0, 0, 0))}, {EventSessionUpdated, sessionUsage("s1", 1, tok(10, 5, 0, 0, 0))}},
			u(10, 5, 1), map[string]workspace.AgentUsage{}, true},
		{"a completed message counts on its local day",
			[]step{{EventSessionCreated, sessionUsage("s1", 0, tok(0, 0, 0, 0, 0))}, {EventMessageUpdated, assistant("m1", "s1", 0.25, tok(10, 5, 1, 3, 0), at(23, 30))}},
			u(0, 0, 0), map[string]workspace.AgentUsage{"2026-11-27": u(13, 6, 0.25)}, false},
		{"a message before midnight and one after are two days",
			[]step{{EventSessionCreated, sessionUsage("s1", 0, tok(0, 0, 0, 0, 0))}, {EventMessageUpdated, assistant("m1", "s1", 1, tok(10, 5, 0, 0, 0), at(23, 59))},
				{EventMessageUpdated, assistant("m2", "s1", 2, tok(20, 6, 0, 0, 0), at(24, 1))}},
			u(0, 0, 0), map[string]workspace.AgentUsage{"2026-11-27": u(10, 5, 1), "2026-11-28": u(20, 6, 2)}, false},
		{"a message not yet completed counts on no day",
			[]step{{EventSessionCreated, sessionUsage("s1", 0, tok(0, 0, 0, 0, 0))}, {EventMessageUpdated, assistant("m1", "s1", 1, tok(10, 5, 0, 0, 0), 0)}},
			u(0, 0, 0), map[string]workspace.AgentUsage{}, true},
		{"a message updated again counts once, with its last figures",
			[]step{{EventSessionCreated, sessionUsage("s1", 0, tok(0, 0, 0, 0, 0))}, {EventMessageUpdated, assistant("m1", "s1", 1, tok(10, 5, 0, 0, 0), at(9, 0))},
				{EventMessageUpdated, assistant("m1", "s1", 2, tok(12, 8, 0, 0, 0), at(9, 0))}},
			u(0, 0, 0), map[string]workspace.AgentUsage{"2026-11-27": u(12, 8, 2)}, false},
		{"a user's message costs nothing",
			[]step{{EventSessionCreated, sessionUsage("s1", 0, tok(0, 0, 0, 0, 0))}, {EventMessageUpdated, map[string]any{"sessionID": "s1", "info": map[string]any{"id": "m1", "sessionID": "s1", "role": "user",
				"time": map[string]any{"created": at(9, 0), "completed": at(9, 0)}}}}},
			u(0, 0, 0), map[string]workspace.AgentUsage{}, true},
		{"a deleted session takes its totals and messages along",
			[]step{{EventSessionUpdated, sessionUsage("s1", 1, tok(10, 5, 0, 0, 0))}, {EventSessionUpdated, sessionUsage("s2", 2, tok(20, 6, 0, 0, 0))},
				{EventMessageUpdated, assistant("m1", "s1", 1, tok(10, 5, 0, 0, 0), at(9, 0))},
				{EventMessageUpdated, assistant("m2", "s2", 2, tok(20, 6, 0, 0, 0), at(9, 0))},
				{EventSessionDeleted, sessionUsage("s1", 1, tok(10, 5, 0, 0, 0))}},
			u(20, 6, 2), map[string]workspace.AgentUsage{"2026-11-27": u(20, 6, 2)}, false},
		{"sessions of another worktree of the repository, and their messages, do not count",
			[]step{{EventSessionUpdated, sessionUsage("s1", 1, tok(10, 5, 0, 0, 0))},
				{EventMessageUpdated, assistant("m1", "s1", 1, tok(10, 5, 0, 0, 0), at(9, 0))},
				{EventSessionCreated, sessionIn("/work/repo", "s2", 2, tok(20, 6, 0, 0, 0))},
				{EventSessionUpdated, sessionIn("/work/repo-other", "s3", 4, tok(40, 8, 0, 0, 0))},
				{EventMessageUpdated, assistant("m2", "s2", 2, tok(20, 6, 0, 0, 0), at(9, 0))}},
			u(10, 5, 1), map[string]workspace.AgentUsage{"2026-11-27": u(10, 5, 1)}, true},
		{"a message of a session not known to be ours does not count",
			[]step{{EventMessageUpdated, assistant("m1", "s9", 1, tok(10, 5, 0, 0, 0), at(9, 0))}},
			u(0, 0, 0), map[string]workspace.AgentUsage{}, true},
		{"other events and broken ones are ignored",
			[]step{{EventSessionStatus, status("s1", "busy")}, {EventMessageUpdated, "not an object"}, {EventSessionUpdated, map[string]any{"info": map[string]any{"cost": 3}}}},
			u(0, 0, 0), map[string]workspace.AgentUsage{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewUsageTracker(usageZone, usageDir)
			changed := false
			for _, s := range tt.steps {
				changed = tr.Apply(ev(t, s.typ, s.props))
			}
			got := tr.Usage()
			if got.Total != tt.total || !maps.Equal(got.Days, tt.days) {
				t.Errorf("usage = %+v, want total %+v, days %+v", got, tt.total, tt.days)
			}
			if len(tt.steps) > 0 && changed == tt.unchanged {
				t.Errorf("last step reported changed = %v, want %v", changed, !tt.unchanged)
			}
		})
	}
}

func TestUsageTrackerResyncReplacesWhatItKnew(t *testing.T) {
	tr := NewUsageTracker(usageZone, usageDir+"/")
	tr.Apply(ev(t, EventSessionUpdated, sessionUsage("gone", 9, tok(90, 9, 0, 0, 0))))
	tr.Apply(ev(t, EventMessageUpdated, assistant("m0", "gone", 9, tok(90, 9, 0, 0, 0), at(8, 0))))

	s1 := usageInfo{ID: "s1", Directory: usageDir, Cost: 1.5}
	s1.Tokens.Input, s1.Tokens.Output = 30, 9
	m1 := usageInfo{ID: "m1", SessionID: "s1", Role: "assistant", Cost: 0.5}
	m1.Tokens.Input, m1.Tokens.Output, m1.Time.Completed = 10, 3, at(10, 0)
	// A sibling worktree's session and message, as GET /session lists them.
	s2 := usageInfo{ID: "s2", Directory: "/work/repo", Cost: 7}
	m2 := usageInfo{ID: "m2", SessionID: "s2", Role: "assistant", Cost: 7}
	m2.Time.Completed = at(10, 0)
	if !tr.Resync([]usageInfo{s1, s2}, []usageInfo{m1, m2}) {
		t.Error("Resync reported no change")
	}
	got := tr.Usage()
	want := workspace.AgentUsage{InputTokens: 30, OutputTokens: 9, Cost: 1.5}
	if got.Total != want {
		t.Errorf("total = %+v, want %+v", got.Total, want)
	}
	if d := got.Day(time.UnixMilli(at(12, 0)), usageZone); d != (workspace.AgentUsage{InputTokens: 10, OutputTokens: 3, Cost: 0.5}) {
		t.Errorf("day = %+v, want only m1", d)
	}
	if tr.Resync([]usageInfo{s1}, []usageInfo{m1}) {
		t.Error("the same resync again reported a change")
	}
}

func TestGrowthCountsOnlyWhatGrew(t *testing.T) {
	got := growth(workspace.AgentUsage{InputTokens: 10, OutputTokens: 8, Cost: 2}, workspace.AgentUsage{InputTokens: 15, OutputTokens: 3, Cost: 2.5})
	if want := (workspace.AgentUsage{InputTokens: 5, OutputTokens: 0, Cost: 0.5}); got != want {
		t.Errorf("growth = %+v, want %+v", got, want)
	}
}
