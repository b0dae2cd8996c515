package workspace

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"codehydra/internal/testenv"
)

func TestASlowSubscriberNeverBlocksTheManager(t *testing.T) {
	t.Parallel()
	m, logs := newManager(t, Options{})
	slow, cancelSlow := m.Subscribe() // never read
	defer cancelSlow()
	fast := record(t, m)

	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range eventBuffer * 4 {
			m.Publish(Event{Kind: EventAgentChanged, ProjectPath: fmt.Sprint(i)})
		}
	}()
	select {
	case <-done:
	case <-time.After(soon):
		t.Fatal("Publish blocked on a subscriber that does not read")
	}
	if len(slow) != eventBuffer {
		t.Fatalf("slow subscriber holds %d events, want a full buffer of %d", len(slow), eventBuffer)
	}
	if !strings.Contains(logs.String(), "dropping events") {
		t.Fatalf("drop not logged:\n%s", logs)
	}
	// A subscriber that reads keeps getting events after the burst, once
	// it has caught up.
	testenv.WaitFor(t, "the reading subscriber to get an event after the burst", soon, func() bool {
		if slices.ContainsFunc(fast.all(), func(e Event) bool { return e.ProjectPath == "after the burst" }) {
			return true
		}
		m.Publish(Event{Kind: EventAgentChanged, ProjectPath: "after the burst"})
		return false
	})
}

func TestCancelClosesTheChannelAndStopsDelivery(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, Options{})
	ch, cancel := m.Subscribe()
	m.Publish(Event{Kind: EventAgentChanged})
	cancel()
	cancel() // twice is fine
	if e, ok := <-ch; !ok || e.Kind != EventAgentChanged {
		t.Fatalf("buffered event lost: %+v %v", e, ok)
	}
	if _, ok := <-ch; ok {
		t.Fatal("channel not closed")
	}
	m.Publish(Event{Kind: EventAgentChanged}) // no panic on a closed channel
}

func TestManagerIsSafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	m, p := setupWith(t, &fakeAgents{})
	m.opts.PollInterval = 5 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runManager(t, m)
	record(t, m)

	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			name := fmt.Sprintf("c%d", i)
			ws, err := m.Create(ctx, CreateOptions{ProjectPath: p.Path, Name: name})
			if err != nil {
				t.Errorf("create %s: %v", name, err)
				return
			}
			if err := m.SetMetadata(ctx, ws.Path, "note", ptr(name)); err != nil {
				t.Errorf("set metadata %s: %v", name, err)
			}
			if _, err := m.Status(ctx, ws.Path); err != nil {
				t.Errorf("status %s: %v", name, err)
			}
			if md, err := m.Metadata(ctx, ws.Path); err != nil || md["note"] != name {
				t.Errorf("metadata %s = %v, %v", name, md, err)
			}
			if err := m.Delete(ctx, ws.Path, DeleteOptions{KeepBranch: i%2 == 0}); err != nil {
				t.Errorf("delete %s: %v", name, err)
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			m.Projects()
			m.AllWorkspaces()
			m.Workspaces(p.Path)
			m.Resolve(p.Path)
		}
	})
	wg.Wait()
	if got := m.AllWorkspaces(); len(got) != 0 {
		t.Fatalf("workspaces left: %+v", got)
	}
}
