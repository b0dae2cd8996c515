//go:build unix

package opencode

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// fakePrompt is a prompt the fake opencode took.
type fakePrompt struct {
	Session string `json:"session"`
	Text    string `json:"text"`
	Agent   string `json:"agent"`
	Model   string `json:"model"`
}

// takenPrompts are the prompts the agent of path took, in order.
func takenPrompts(t *testing.T, s *Supervisor, path string) []fakePrompt {
	t.Helper()
	port, _, ok := s.OpencodeServer(path)
	if !ok {
		t.Fatalf("the agent of %s is not ready", path)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/fake/prompts", port))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []fakePrompt
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// readyAPI is the API of the ready agent of path, as the supervisor
// uses it.
func readyAPI(t *testing.T, s *Supervisor, path string) agentAPI {
	t.Helper()
	port, password, ok := s.OpencodeServer(path)
	if !ok {
		t.Fatalf("the agent of %s is not ready", path)
	}
	return newAgentAPI(http.DefaultClient, port, password)
}

// waitReview waits until the review id of path is no longer pending and
// returns its delivery.
func waitReview(t *testing.T, s *Supervisor, path, id string) workspace.ReviewDelivery {
	t.Helper()
	var d workspace.ReviewDelivery
	testenv.WaitFor(t, "review "+id+" to leave pending", 15*time.Second, func() bool {
		for _, r := range s.Reviews(path) {
			if r.ID == id {
				d = r
			}
		}
		return d.State != "" && d.State != workspace.DeliveryPending
	})
	return d
}

var aReview = workspace.Review{From: "user", Summary: "Nearly there.", Comments: []workspace.ReviewComment{
	{File: "src/a.go", Line: 12, EndLine: 14, Text: "handle the error"},
}}

// A review goes into the agent's current session: the top-level one of
// its workspace updated last (not a subagent's, not another worktree's),
// with the agent and model of the last user message there, once; the
// tray hears of it, and its record (0600) says delivered.
func TestAReviewGoesIntoTheCurrentSessionWithItsAgentAndModel(t *testing.T) {
	f := newFixture(t)
	s := f.start(f.options())
	ws := worktreeWorkspace(t)
	s.Start(ws)
	waitState(t, s, ws.Path, workspace.AgentStateReady, 10*time.Second)
	api := readyAPI(t, s, ws.Path)
	ctx := context.Background()
	current, _, err := api.sendPrompt(ctx, workspace.FirstPrompt{Prompt: "earlier work", Agent: "plan", Model: "fake/m"}, "")
	if err != nil {
		t.Fatal(err)
	}
	port, _, _ := s.OpencodeServer(ws.Path)
	// Newer, but not current: a subagent's session and a sibling
	// worktree's (opencode lists the project's sessions in every worktree).
	emit(t, port, true, "session.created", map[string]any{"info": map[string]any{"id": "ses_sub", "parentID": current}})
	emit(t, port, true, "session.created", map[string]any{"info": map[string]any{"id": "ses_sibling", "directory": t.TempDir()}})
	drain(f.changes)

	d, err := s.SendReview(ws.Path, aReview)
	if err != nil {
		t.Fatal(err)
	}
	if d.ID != "r1" || d.From != "user" || d.Comments != 1 || d.Sent.IsZero() || d.State == workspace.DeliveryFailed {
		t.Fatalf("SendReview = %+v", d)
	}
	if !changed(f.changes, ws.Path) {
		t.Error("OnChange did not hear of the review")
	}
	d = waitReview(t, s, ws.Path, "r1")
	if d.State != workspace.DeliveryDelivered || d.SessionID != current {
		t.Fatalf("delivery = %+v, want delivered in the current session %s", d, current)
	}
	want := fakePrompt{Session: current, Text: aReview.Prompt(), Agent: "plan", Model: "fake/m"}
	if got := takenPrompts(t, s, ws.Path); len(got) != 2 || got[1] != want {
		t.Fatalf("prompts taken %+v, want the earlier one, then %+v", got, want)
	}
	gitDir, err := worktreeGitDir(ws.Path)
	if err != nil {
		t.Fatal(err)
	}
	record := filepath.Join(gitDir, "codehydra-reviews", "r1.json")
	fi, err := os.Stat(record)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("record %s: %v %v, want 0600", record, fi, err)
	}
	if b, _ := os.ReadFile(record); !strings.Contains(string(b), `"state":"delivered"`) || strings.Contains(string(b), `"sending"`) {
		t.Fatalf("record %s", b)
	}
}

// A review sent while the agent is not ready waits for its ready, and one
// sent while the first prompt waits comes after it, into the session the
// first prompt started: the agent has the task's context. An agent
// without any session gets a new one.
func TestAReviewWaitsForTheFirstPromptAndFollowsItIntoItsSession(t *testing.T) {
	f := newFixture(t)
	s := f.start(f.options())
	ws := worktreeWorkspace(t)
	if _, err := s.QueuePrompt(ws.Path, workspace.FirstPrompt{Prompt: "the task"}); err != nil {
		t.Fatal(err)
	}
	d, err := s.SendReview(ws.Path, aReview)
	if err != nil || d.State != workspace.DeliveryPending {
		t.Fatalf("SendReview before the agent runs = %+v, %v; want pending", d, err)
	}
	s.Start(ws)
	waitState(t, s, ws.Path, workspace.AgentStateReady, 10*time.Second)
	d = waitReview(t, s, ws.Path, "r1")
	first, _ := s.PromptDelivery(ws.Path)
	if first.State != workspace.DeliveryDelivered || d.State != workspace.DeliveryDelivered || d.SessionID != first.SessionID {
		t.Fatalf("first prompt %+v, review %+v; want both delivered in one session", first, d)
	}
	got := takenPrompts(t, s, ws.Path)
	if len(got) != 2 || got[0].Text != "the task" || got[1].Text != aReview.Prompt() || got[1].Session != got[0].Session {
		t.Fatalf("prompts taken %+v, want the task, then the review in its session", got)
	}

	// Without any session, a review starts one.
	other := worktreeWorkspace(t)
	s.Start(other)
	waitState(t, s, other.Path, workspace.AgentStateReady, 10*time.Second)
	if _, err := s.SendReview(other.Path, aReview); err != nil {
		t.Fatal(err)
	}
	if d := waitReview(t, s, other.Path, "r1"); d.State != workspace.DeliveryDelivered || d.SessionID != "ses_fake001" {
		t.Fatalf("review of an agent without sessions = %+v, want delivered in a new session", d)
	}
}

func TestSendReviewRefusesAnInvalidReviewAndRecordsNothing(t *testing.T) {
	f := newFixture(t)
	s := f.start(f.options())
	ws := worktreeWorkspace(t)
	for name, r := range map[string]workspace.Review{
		"empty":          {From: "user"},
		"a file outside": {From: "user", Comments: []workspace.ReviewComment{{File: "../x", Text: "no"}}},
	} {
		if _, err := s.SendReview(ws.Path, r); workspace.CodeOf(err) != workspace.CodeInvalidInput {
			t.Errorf("%s: %v, want invalid-input", name, err)
		}
	}
	if got := s.Reviews(ws.Path); got != nil {
		t.Errorf("Reviews = %+v, want none", got)
	}
	gitDir, _ := worktreeGitDir(ws.Path)
	if _, err := os.Stat(filepath.Join(gitDir, "codehydra-reviews")); !os.IsNotExist(err) {
		t.Errorf("a refused review left records: %v", err)
	}
}

// A prompt whose record says "sending" when CodeHydra starts (it stopped
// while it handed the prompt over) may have reached the agent: it is
// reported failed and not sent again, the first prompt and a review
// alike; what comes after it is delivered.
func TestAPromptFoundSendingAtStartIsReportedFailedAndNotSentAgain(t *testing.T) {
	f := newFixture(t)
	ws := worktreeWorkspace(t)
	before := f.start(f.options())
	if _, err := before.QueuePrompt(ws.Path, workspace.FirstPrompt{Prompt: "the task"}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := before.SendReview(ws.Path, aReview); err != nil {
			t.Fatal(err)
		}
	}
	gitDir, _ := worktreeGitDir(ws.Path)
	// What a crash in the middle of the first two deliveries leaves.
	for _, name := range []string{"codehydra-first-prompt.json", "codehydra-reviews/r1.json"} {
		file := filepath.Join(gitDir, name)
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var rec map[string]any
		if err := json.Unmarshal(b, &rec); err != nil {
			t.Fatal(err)
		}
		rec["sending"] = true
		b, _ = json.Marshal(rec)
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	s := f.start(f.options())
	s.Start(ws)
	waitState(t, s, ws.Path, workspace.AgentStateReady, 10*time.Second)
	first, _ := s.PromptDelivery(ws.Path)
	if first.State != workspace.DeliveryFailed || !strings.Contains(first.Error, "may or may not have arrived") {
		t.Errorf("first prompt = %+v, want failed: it may have arrived", first)
	}
	if d := waitReview(t, s, ws.Path, "r1"); d.State != workspace.DeliveryFailed || !strings.Contains(d.Error, "handed the review") {
		t.Errorf("review r1 = %+v, want failed: it may have arrived", d)
	}
	if d := waitReview(t, s, ws.Path, "r2"); d.State != workspace.DeliveryDelivered {
		t.Errorf("review r2 = %+v, want delivered", d)
	}
	if got := takenPrompts(t, s, ws.Path); len(got) != 1 || got[0].Text != aReview.Prompt() {
		t.Fatalf("prompts taken %+v, want r2 alone", got)
	}
}

// A workspace keeps its last maxReviews reviews and their records; while
// all of them wait for the agent, another is refused. Delivered, they go
// out in the order they came, and the oldest make room for new ones.
func TestReviewsKeepTheLastTwentyInOrderAndRefuseMoreWhileAllWait(t *testing.T) {
	f := newFixture(t)
	s := f.start(f.options())
	ws := worktreeWorkspace(t)
	review := func(n int) workspace.Review {
		return workspace.Review{From: "/ws/parent", Summary: fmt.Sprintf("review %d", n)}
	}
	for n := 1; n <= maxReviews; n++ {
		if _, err := s.SendReview(ws.Path, review(n)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.SendReview(ws.Path, review(maxReviews+1)); workspace.CodeOf(err) != workspace.CodeConflict {
		t.Fatalf("review %d while %d wait: %v, want conflict", maxReviews+1, maxReviews, err)
	}
	s.Start(ws)
	waitState(t, s, ws.Path, workspace.AgentStateReady, 10*time.Second)
	waitReview(t, s, ws.Path, fmt.Sprintf("r%d", maxReviews))
	for n := maxReviews + 1; n <= maxReviews+5; n++ {
		if _, err := s.SendReview(ws.Path, review(n)); err != nil {
			t.Fatal(err)
		}
	}
	waitReview(t, s, ws.Path, fmt.Sprintf("r%d", maxReviews+5))

	var texts []string
	for _, p := range takenPrompts(t, s, ws.Path) {
		texts = append(texts, p.Text)
	}
	var want []string
	for n := 1; n <= maxReviews+5; n++ {
		want = append(want, review(n).Prompt())
	}
	if !slices.Equal(texts, want) {
		t.Fatalf("prompts taken, in order:\n%q\nwant\n%q", texts, want)
	}
	got := s.Reviews(ws.Path)
	var ids []string
	for _, d := range got {
		ids = append(ids, d.ID)
		if d.State != workspace.DeliveryDelivered || d.From != "/ws/parent" {
			t.Errorf("review %+v, want delivered, from the parent", d)
		}
	}
	if len(ids) != maxReviews || ids[0] != "r6" || ids[len(ids)-1] != fmt.Sprintf("r%d", maxReviews+5) {
		t.Fatalf("kept reviews %v, want r6 to r%d", ids, maxReviews+5)
	}
	gitDir, _ := worktreeGitDir(ws.Path)
	files, err := os.ReadDir(filepath.Join(gitDir, "codehydra-reviews"))
	if err != nil || len(files) != maxReviews {
		t.Fatalf("%d records (%v), want %d", len(files), err, maxReviews)
	}
	// A new start of CodeHydra reads the same.
	if again := f.start(f.options()).Reviews(ws.Path); !slices.EqualFunc(again, got, func(a, b workspace.ReviewDelivery) bool {
		return a.ID == b.ID && a.State == b.State && a.SessionID == b.SessionID && a.Sent.Equal(b.Sent)
	}) {
		t.Fatalf("reviews read again:\n%+v\nwant\n%+v", again, got)
	}
}
