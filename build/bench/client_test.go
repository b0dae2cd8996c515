package main

import (
	"net/http"
	"strings"
	"testing"
)

func TestCheckAnswerTakesOnlyTheCallsSuccessfulResult(t *testing.T) {
	ok := `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"{}"}]}}`
	for _, c := range []struct {
		name, answer string
		want         bool
	}{
		{"json", ok, true},
		{"event", "event: message\ndata: " + ok + "\n\n", true},
		{"event, result first", "event: message\ndata: {\"result\":{\"content\":[{}]},\"jsonrpc\":\"2.0\",\"id\":7}\n\n", true},
		{"another id", strings.Replace(ok, `"id":7`, `"id":70`, 1), false},
		{"tool error", `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"no"}],"isError":true}}`, false},
		{"no content", `{"jsonrpc":"2.0","id":7,"result":{}}`, false},
		{"protocol error", `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"no"}}`, false},
		{"two messages", "data: " + ok + "\n\ndata: " + ok + "\n\n", false},
		{"not json", "Forbidden", false},
	} {
		if err := checkAnswer([]byte(c.answer), 7); (err == nil) != c.want {
			t.Errorf("%s: %v, want ok %v", c.name, err, c.want)
		}
	}
}

func TestSentCallSplitsTheFirstToolsCallAroundItsID(t *testing.T) {
	var s sentCall
	post := func(body string) {
		t.Helper()
		r, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Mcp-Session-Id", "s1")
		if err := s.record(r); err != nil {
			t.Fatal(err)
		}
	}
	post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	if s.header != nil {
		t.Fatal("recorded a request that is not a tools/call")
	}
	post(`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"x","arguments":{"id":12}}}`)
	post(`{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"y"}}`)
	got := string(s.before) + "99" + string(s.after)
	if want := `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"x","arguments":{"id":12}}}`; got != want {
		t.Errorf("replayed body %s, want %s", got, want)
	}
	if s.header.Get("Mcp-Session-Id") != "s1" {
		t.Errorf("header %v, want the request's", s.header)
	}
}
