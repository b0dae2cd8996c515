package mcp

import (
	"encoding/base64"
	"encoding/json"
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
	h := &heldCall{id: "held1", bind: bind, owner: "x", answers: make(chan *sdk.ElicitResult, 1)}
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
	if err != nil || got != h || (<-h.answers).Action != "decline" {
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
