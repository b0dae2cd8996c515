package mcp

import (
	"fmt"
	"testing"
	"time"
)

func TestRateLimiterRefillsOverTimeAndKeepsBucketsApart(t *testing.T) {
	now := time.Unix(1000, 0)
	r := newRateLimiter(2, 2, func() time.Time { return now })
	for i := range 2 {
		if !r.allow(key("/ws/a", "t")) {
			t.Fatalf("call %d within burst refused", i)
		}
	}
	if r.allow(key("/ws/a", "t")) {
		t.Fatal("call past burst allowed")
	}
	if !r.allow(key("/ws/b", "t")) || !r.allow(key("/ws/a", "u")) {
		t.Fatal("a full bucket limited another workspace or tool")
	}
	now = now.Add(500 * time.Millisecond) // 2/s: one token back
	if !r.allow(key("/ws/a", "t")) {
		t.Fatal("no refill after half a second")
	}
	if r.allow(key("/ws/a", "t")) {
		t.Fatal("refilled more than one token")
	}
}

func TestRateLimiterDropsOnlyFullBucketsWhenCrowded(t *testing.T) {
	now := time.Unix(1000, 0)
	r := newRateLimiter(1, 1, func() time.Time { return now })
	for i := range maxLimiters {
		r.allow(key(fmt.Sprintf("gone%d", i), "t")) // workspaces deleted since
	}
	now = now.Add(2 * time.Second) // their buckets are full again
	r.allow(key("busy", "t"))      // crowded: the full buckets go
	if n := r.size(); n != 1 {
		t.Fatalf("%d buckets after pruning, want 1", n)
	}
	for i := range maxLimiters {
		r.allow(key(fmt.Sprintf("live%d", i), "t"))
	}
	if _, kept := r.bucket("busy", "t"); !kept {
		t.Fatal("an empty bucket was dropped, which would reset its limit")
	}
	if r.allow(key("busy", "t")) {
		t.Fatal("the busy workspace got a fresh bucket")
	}
}

func (r *rateLimiter) size() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.buckets)
}

func (r *rateLimiter) bucket(ws, tool string) (any, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, ok := r.buckets[key(ws, tool)]
	return b, ok
}

// key is the bucket of the workspace ws's calls of tool.
func key(ws, tool string) limiterKey { return limiterKey{caller: ws, op: tool} }
