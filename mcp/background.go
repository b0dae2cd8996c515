package mcp

// Work that outlives a tool call: a handler schedules it for after the
// HTTP response is flushed, and Shutdown waits for it.

import (
	"context"
	"net/http"
	"strconv"
)

// callIDHeader is an internal header: trackCalls sets it on every POST (a
// client's own value is dropped) so that a tool handler, which sees the
// request's headers, can schedule work for after the response is sent.
const callIDHeader = "X-Codehydra-Internal-Call"

// trackCalls runs the hooks that tool handlers registered with
// afterResponse once the SDK has written the response, flushing it first.
func (s *Server) trackCalls(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(callIDHeader)
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		id := strconv.FormatUint(s.callSeq.Add(1), 10)
		r.Header.Set(callIDHeader, id)
		s.hooksMu.Lock()
		s.hooks[id] = nil
		s.hooksMu.Unlock()

		// Deferred so that the hooks run (and release what they hold)
		// even if the handler panics.
		defer func() {
			s.hooksMu.Lock()
			fns := s.hooks[id]
			delete(s.hooks, id)
			s.hooksMu.Unlock()
			if len(fns) == 0 {
				return
			}
			_ = http.NewResponseController(w).Flush()
			for _, fn := range fns {
				fn()
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// afterResponse runs fn once the HTTP response carrying the current call's
// result has been flushed, or at once when there is no such response (the
// request is gone already).
func (s *Server) afterResponse(h http.Header, fn func()) {
	id := h.Get(callIDHeader)
	s.hooksMu.Lock()
	if fns, ok := s.hooks[id]; ok && id != "" {
		s.hooks[id] = append(fns, fn)
		s.hooksMu.Unlock()
		return
	}
	s.hooksMu.Unlock()
	fn()
}

// reserveBackground claims a slot for work that will outlive the request,
// so that Shutdown waits for it even if the work has not started yet. It
// reports false when the server is shutting down. Each reserved slot must
// be used by exactly one runBackground or releaseBackground.
func (s *Server) reserveBackground() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.bg.Add(1)
	return true
}

// releaseBackground gives back a slot taken with reserveBackground whose
// work will not run after all.
func (s *Server) releaseBackground() { s.bg.Done() }

// runBackground runs fn in a slot taken with reserveBackground, with a
// context that lives as long as the server.
func (s *Server) runBackground(fn func(ctx context.Context)) {
	go func() {
		defer s.bg.Done()
		fn(s.bgCtx)
	}()
}
