// Package fakemodel is a small OpenAI-compatible chat model for tests that
// drive a real opencode without a real model. It serves
// POST /v1/chat/completions (streaming and not) on 127.0.0.1.
//
// Its behaviour is scripted by the conversation itself: when the last
// message is a user message containing a line
//
//	CALL <tool> <json arguments>
//
// and the request offers that tool, it answers with a call of that tool
// (finish_reason "tool_calls"). On any other turn — in particular one whose
// last message is a tool result — it answers with plain text, so a turn
// always ends.
package fakemodel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Request is what the model was asked, reduced to what tests look at.
type Request struct {
	// Tools are the names of the tools offered.
	Tools []string
	// LastRole is the role of the last message ("user", "tool", ...).
	LastRole string
	// LastText is the text of the last message.
	LastText string
	// ToolCall is the tool the model decided to call, "" for a text answer.
	ToolCall string
}

// Server is a running fake model.
type Server struct {
	// BeforeReply, if set, runs before each answer is sent; a test can
	// block in it to keep a turn busy. It is called from the request's
	// goroutine; ctx ends when the client goes away.
	BeforeReply func(ctx context.Context, r Request)

	mu       sync.Mutex
	requests []Request
	calls    int
	ln       net.Listener
	srv      *http.Server
}

// Start listens on 127.0.0.1 with a dynamic port and serves until Close.
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen for fake model: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.chat)
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"m","object":"model","owned_by":"fake"}]}`))
	})
	s.ln = ln
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return nil
}

// BaseURL is the provider base URL, "http://127.0.0.1:<port>/v1".
func (s *Server) BaseURL() string { return "http://" + s.ln.Addr().String() + "/v1" }

// Close stops the server and ends open requests.
func (s *Server) Close() error {
	if s.srv == nil {
		return nil
	}
	return s.srv.Close()
}

// Requests returns the requests answered so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

type chatRequest struct {
	Stream   bool          `json:"stream"`
	Messages []chatMessage `json:"messages"`
	Tools    []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// text returns the message content whether it is a string or a list of
// typed parts.
func (m chatMessage) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(m.Content, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// decide picks the answer: a tool call (name, arguments) or text.
func decide(req chatRequest) (r Request, args string) {
	for _, t := range req.Tools {
		r.Tools = append(r.Tools, t.Function.Name)
	}
	if len(req.Messages) == 0 {
		return r, ""
	}
	last := req.Messages[len(req.Messages)-1]
	r.LastRole, r.LastText = last.Role, last.text()
	if last.Role != "user" {
		return r, ""
	}
	for _, line := range strings.Split(r.LastText, "\n") {
		line = strings.TrimSpace(line)
		rest, ok := strings.CutPrefix(line, "CALL ")
		if !ok {
			continue
		}
		name, a, _ := strings.Cut(strings.TrimSpace(rest), " ")
		a = strings.TrimSpace(a)
		if a == "" {
			a = "{}"
		}
		for _, t := range r.Tools {
			if t == name {
				r.ToolCall = name
				return r, a
			}
		}
	}
	return r, ""
}

func (s *Server) chat(w http.ResponseWriter, hr *http.Request) {
	var req chatRequest
	if err := json.NewDecoder(hr.Body).Decode(&req); err != nil {
		http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	r, args := decide(req)
	s.mu.Lock()
	s.requests = append(s.requests, r)
	s.calls++
	id := fmt.Sprintf("call_%d", s.calls)
	s.mu.Unlock()
	if s.BeforeReply != nil {
		s.BeforeReply(hr.Context(), r)
	}
	if hr.Context().Err() != nil {
		return
	}
	text := "Done."
	if r.LastRole == "tool" {
		text = "The tool answered: " + truncate(r.LastText, 200)
	}
	if !req.Stream {
		writeWhole(w, r, id, args, text)
		return
	}
	writeStream(w, r, id, args, text)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

func writeWhole(w http.ResponseWriter, r Request, id, args, text string) {
	msg := map[string]any{"role": "assistant", "content": text}
	finish := "stop"
	if r.ToolCall != "" {
		msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": id, "type": "function",
			"function": map[string]any{"name": r.ToolCall, "arguments": args},
		}}}
		finish = "tool_calls"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-fake", "object": "chat.completion", "created": time.Now().Unix(), "model": "m",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	})
}

func writeStream(w http.ResponseWriter, r Request, id, args, text string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	send := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": "m",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		}
	}
	var chunks []map[string]any
	if r.ToolCall != "" {
		chunks = []map[string]any{
			chunk(map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"index": 0, "id": id, "type": "function",
				"function": map[string]any{"name": r.ToolCall, "arguments": args},
			}}}, nil),
			chunk(map[string]any{}, "tool_calls"),
		}
	} else {
		chunks = []map[string]any{
			chunk(map[string]any{"role": "assistant", "content": text}, nil),
			chunk(map[string]any{}, "stop"),
		}
	}
	usage := map[string]any{
		"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": "m",
		"choices": []any{},
		"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	}
	for _, c := range append(chunks, usage) {
		if err := send(c); err != nil {
			return
		}
	}
	if _, err := fmt.Fprint(w, "data: [DONE]\n\n"); err != nil && !errors.Is(err, http.ErrHandlerTimeout) {
		return
	}
	if flusher != nil {
		flusher.Flush()
	}
}
