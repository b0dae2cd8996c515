package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/workspace"
)

// A requestState verifies only for the caller, tool and arguments it was
// issued for, unaltered and in time; a held call takes one answer per
// question. (The calls through real clients are in gateway/eras_test.go.)
func TestARequestStateHoldsOnlyForItsCallerAndCallAndOnce(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	hc := newHeldCalls(func() time.Time { return now })
	user := caller{}
	ws := caller{ws: workspace.Workspace{Path: "/w/a"}, nonce: "n1"}
	args := json.RawMessage(`{"a": 1, "b": [2]}`)
	bind := binding(ws, "up__ask", args)
	h := &heldCall{id: "held1", bind: bind, owner: "x", answers: make(chan heldAnswer, 1)}
	round, ok := hc.hold(h, now.Add(time.Minute))
	if !ok {
		t.Fatal("hold refused the first call")
	}
	state := hc.sign(h.id, round, now.Add(time.Minute), bind)
	answer := sdk.InputResponseMap{questionID(round): &sdk.ElicitResult{Action: "decline"}}

	tamper := func(s string) string {
		p, m, _ := strings.Cut(s, ".")
		raw, _ := base64.RawURLEncoding.DecodeString(p)
		raw = []byte(strings.Replace(string(raw), "held1", "held2", 1))
		return base64.RawURLEncoding.EncodeToString(raw) + "." + m
	}
	for _, tc := range []struct {
		name, state, bind string
	}{
		{"another caller (the user)", state, binding(user, "up__ask", args)},
		{"another registration of the same workspace", state, binding(caller{ws: ws.ws, nonce: "n2"}, "up__ask", args)},
		{"another tool", state, binding(ws, "up__other", args)},
		{"other arguments", state, binding(ws, "up__ask", json.RawMessage(`{"a":2,"b":[2]}`))},
		{"an altered state", tamper(state), bind},
		{"a made-up state", "aGVsZDEuMS45OTk5OTk5OTk5.AAAA", bind},
		{"no state", "", bind},
	} {
		if _, err := hc.answer(tc.state, tc.bind, answer); err == nil || workspace.CodeOf(err) != workspace.CodeInvalidInput {
			t.Errorf("%s: answer = %v, want invalid-input", tc.name, err)
		}
	}
	if _, err := hc.answer(state, bind, sdk.InputResponseMap{"q9": &sdk.ElicitResult{Action: "accept"}}); err == nil {
		t.Error("an answer to another question was taken")
	}
	// The same arguments, spaced otherwise, are the same call.
	got, err := hc.answer(state, binding(ws, "up__ask", json.RawMessage(`{"a":1,"b":[2]}`)), answer)
	if err != nil || got != h || (<-h.answers).res.Action != "decline" {
		t.Fatalf("the rightful answer was not taken: %v", err)
	}
	if _, err := hc.answer(state, bind, answer); err == nil || !strings.Contains(err.Error(), "answered already") {
		t.Fatalf("a replayed state was taken again: %v", err)
	}

	round, _ = hc.hold(h, now.Add(time.Second))
	late := hc.sign(h.id, round, now.Add(time.Second), bind)
	now = now.Add(2 * time.Second)
	if _, err := hc.answer(late, bind, sdk.InputResponseMap{questionID(round): &sdk.ElicitResult{Action: "cancel"}}); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("an expired state was taken: %v", err)
	}
}

// At most maxHeldPerCaller calls of one caller, and maxHeld in all, wait
// for their clients' answers.
func TestHeldCallsAreBoundedPerCallerAndInAll(t *testing.T) {
	hc := newHeldCalls(time.Now)
	exp := time.Now().Add(time.Minute)
	hold := func(owner string, k int) bool {
		_, ok := hc.hold(&heldCall{id: owner + string(rune('a'+k)), owner: owner}, exp)
		return ok
	}
	for k := range maxHeldPerCaller {
		if !hold("one", k) {
			t.Fatalf("call %d of one caller was refused", k+1)
		}
	}
	if hold("one", maxHeldPerCaller) {
		t.Fatal("one caller held more than maxHeldPerCaller calls")
	}
	held := maxHeldPerCaller
	for c := 0; held < maxHeld; c++ {
		for k := 0; k < maxHeldPerCaller && held < maxHeld; k++ {
			if !hold("caller"+string(rune('A'+c)), k) {
				t.Fatalf("call %d in all was refused", held+1)
			}
			held++
		}
	}
	if hold("last", 0) {
		t.Fatal("more than maxHeld calls were held")
	}
}

// askAndWait is a held gateway call that asks one question, then runs
// until its context ends; ended closes when it returns.
func askAndWait(ended chan struct{}) heldRun {
	return func(ctx context.Context, ask Asker) (sdk.Result, error) {
		defer close(ended)
		if _, err := ask(ctx, &sdk.ElicitParams{Message: "go on?", RequestedSchema: map[string]any{"type": "object"}}); err != nil {
			return nil, err
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}
}

// holdCall starts a held call of who that asks one question and waits,
// and returns when the question reached the caller.
func holdCall(t *testing.T, s *Server, who caller) (ended chan struct{}) {
	t.Helper()
	ended = make(chan struct{})
	rt := roundTrip{who: who, name: "up__ask", args: json.RawMessage(`{}`), server: "up",
		question: func(q sdk.InputRequestMap, state string) sdk.Result {
			return &sdk.CallToolResult{InputRequests: q, RequestState: state}
		}}
	res, err := s.callAskingInResults(context.Background(), rt, askAndWait(ended))
	if r, ok := res.(*sdk.CallToolResult); err != nil || !ok || r.RequestState == "" {
		t.Fatalf("the first request got %v, %v; want its question", res, err)
	}
	return ended
}

// A call held for its client's answer survives neither Shutdown (which
// promises that no goroutine of the server does) nor its caller's
// workspace.
func TestHeldCallsEndWithTheServerAndWithTheirWorkspace(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.ElicitTimeout = time.Hour; o.CallTimeout = 2 * time.Hour })
	ws := h.create("asker")
	nonce, err := workspace.TokenNonce(ws.Path)
	if err != nil {
		t.Fatal(err)
	}
	ofWorkspace := holdCall(t, h.srv, caller{ws: ws, nonce: nonce})
	ofUser := holdCall(t, h.srv, caller{})
	if err := h.mgr.Delete(context.Background(), ws.Path, workspace.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ofWorkspace:
	case <-time.After(10 * time.Second):
		t.Fatal("the held call of a deleted workspace still runs")
	}
	select {
	case <-ofUser:
		t.Fatal("the user's held call ended with another caller's workspace")
	default:
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := h.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ofUser:
	default:
		t.Fatal("a held call survived Shutdown")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Shutdown waited %s for a held call that no answer can reach", d)
	}
	if _, err := h.srv.callAskingInResults(context.Background(), roundTrip{who: caller{}, name: "up__ask"}, askAndWait(make(chan struct{}))); workspace.CodeOf(err) != workspace.CodeInternal {
		t.Fatalf("a call was held after Shutdown: %v", err)
	}
}

// A question whose answer was taken while it timed out does not hand that
// answer to the call's next question, and the call, whichever way its
// question ends, takes no place among the held after it.
func TestAnAnswerTakenAsItsQuestionTimedOutAnswersNoLaterQuestion(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.ElicitTimeout = 300 * time.Millisecond; o.CallTimeout = time.Hour })
	s := h.srv
	hc := &heldCall{id: "race", bind: "b", owner: "o", events: make(chan heldEvent, 2), answers: make(chan heldAnswer, 1), turn: make(chan struct{}, 1)}
	ask := s.heldAsker(context.Background(), hc, nil, "up", "")
	params := &sdk.ElicitParams{Message: "?", RequestedSchema: map[string]any{"type": "object"}}
	asked := func() <-chan *sdk.ElicitResult {
		got := make(chan *sdk.ElicitResult, 1)
		go func() {
			a, err := ask(context.Background(), params)
			if err != nil {
				t.Errorf("ask: %v", err)
			}
			got <- a
		}()
		return got
	}
	// Round 1 times out; its answer, taken by answer in the same instant,
	// is left in the buffer, as the race leaves it.
	got := asked()
	ev := <-hc.events
	if a := <-got; a.Action != answerCancel {
		t.Fatalf("round 1 = %q, want cancel", a.Action)
	}
	hc.answers <- heldAnswer{round: ev.round, res: &sdk.ElicitResult{Action: "accept"}}
	held := func() bool {
		s.held.mu.Lock()
		defer s.held.mu.Unlock()
		return s.held.calls[hc.id] != nil
	}

	got = asked()
	ev2 := <-hc.events
	// An answer of round 1 that comes now is not round 2's either.
	hc.answers <- heldAnswer{round: ev.round, res: &sdk.ElicitResult{Action: "accept"}}
	if a := <-got; a.Action != answerCancel {
		t.Fatalf("round %d got round %d's answer %q; want cancel at its timeout", ev2.round, ev.round, a.Action)
	}
	if held() {
		t.Fatal("the call still holds a place after its question ended")
	}

	// The rightful answer still reaches round 3, and frees its place.
	got = asked()
	ev3 := <-hc.events
	state := s.held.sign(hc.id, ev3.round, ev3.exp, hc.bind)
	if _, err := s.held.answer(state, hc.bind, sdk.InputResponseMap{questionID(ev3.round): &sdk.ElicitResult{Action: "decline"}}); err != nil {
		t.Fatal(err)
	}
	if a := <-got; a.Action != answerDecline {
		t.Fatalf("round 3 = %q, want decline", a.Action)
	}
	if held() {
		t.Fatal("the call still holds a place after its answer")
	}
}

// A held call whose own deadline (its first request's) passed while a
// retry waited is a timeout, not the server's failure.
func TestAHeldCallsDeadlineIsATimeout(t *testing.T) {
	h := newHarness(t)
	err := h.srv.gatewayError(context.Background(), context.Background(), "up__ask", "up",
		fail(fmt.Errorf("calling tool: %w", context.DeadlineExceeded)))
	if workspace.CodeOf(err) != workspace.CodeTimeout {
		t.Fatalf("gatewayError = %v, want timeout", err)
	}
}
