package opencode

// The prompts the supervisor hands to a workspace's agent, each exactly
// once: a new workspace's first prompt (workspace_create's initialPrompt),
// into a new session, and reviews (workspace_send_review, the Review
// window), into the agent's current session. They wait until the agent is
// ready and go out one at a time: the first prompt first, then the reviews
// in the order they came, so that a review sent while the first prompt
// waits reaches the session the first prompt started.
//
// Exactly once, also across agent restarts and a crash of CodeHydra: each
// prompt is recorded in the worktree's git admin folder (see
// prompt_record.go), which git removes with the worktree, and its record
// says "sending" before the prompt goes out. A record found "sending" at
// the next start of CodeHydra may or may not have reached the agent: it is
// reported failed rather than sent a second time.

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"codehydra/workspace"
)

// sendAttempts bounds how often a delivery that could not reach a session
// (nothing sent yet) is tried: again after retryDelay while the agent
// stays ready, or at its next ready.
const sendAttempts = 3

// retryDelay is the wait before the n-th (from 1) retry of a delivery that
// sent nothing: 1 s, 2 s, 4 s, … An agent just ready may answer errors for
// a moment; without a retry its prompt would stay pending while it stays
// ready, as delivery otherwise runs only at a ready.
func retryDelay(n int) time.Duration { return time.Second << min(n-1, 5) }

// parcel is one prompt for an agent and what became of it.
type parcel struct {
	prompt workspace.FirstPrompt
	// review says who sent a review and when; nil for the first prompt.
	review   *reviewInfo
	delivery workspace.PromptDelivery
	sending  bool // a delivery runs; the record says so
	attempts int
	file     string // the record
}

// what names p in the log.
func (p *parcel) what() string {
	if p.review == nil {
		return "first prompt"
	}
	return "review"
}

// outbox holds the prompts of one workspace's agent.
type outbox struct {
	gitDir  string // the worktree's git admin folder, where the records are
	first   *parcel
	reviews []*parcel // oldest first, at most maxReviews
	lastSeq int       // of the newest review ever recorded here
	// waiting: a delivery that sent nothing waits for its retry, and the
	// prompts after it for it.
	waiting bool
}

// all is the outbox's prompts in the order they are delivered.
func (o *outbox) all() []*parcel {
	if o.first == nil {
		return o.reviews
	}
	return append([]*parcel{o.first}, o.reviews...)
}

// next is the prompt to deliver now, nil for none: one at a time, in
// order, each once.
func (o *outbox) next() *parcel {
	if o.waiting {
		return nil
	}
	all := o.all()
	for _, p := range all {
		if p.sending {
			return nil
		}
	}
	for _, p := range all {
		if p.delivery.State == workspace.DeliveryPending {
			return p
		}
	}
	return nil
}

// prompts are the outboxes of the supervisor's workspaces, by clean path.
type prompts struct {
	mu  sync.Mutex
	all map[string]*outbox
}

// outboxLocked is the outbox of the workspace at key, read from its
// records the first time it is asked for: after a restart of CodeHydra, a
// prompt still pending is delivered when the agent is ready, and one that
// was being sent is reported failed. It fails for a folder that is no
// worktree. Call it with s.prompts.mu held.
func (s *Supervisor) outboxLocked(key string) (*outbox, error) {
	if ob := s.prompts.all[key]; ob != nil {
		return ob, nil
	}
	gitDir, err := worktreeGitDir(key)
	if err != nil {
		return nil, err
	}
	ob, stale := readOutbox(gitDir, func(err error) {
		s.log.Warn("cannot read a prompt's record", slog.String("workspace", key), slog.Any("err", err))
	})
	for _, p := range stale {
		p.delivery = workspace.PromptDelivery{State: workspace.DeliveryFailed,
			Error: "CodeHydra stopped while it handed the " + p.what() + " to the agent; it may or may not have arrived (see the agent's sessions), so it is not sent again"}
		s.persistLocked(key, p)
	}
	s.prompts.all[key] = ob
	return ob, nil
}

// loadOutbox reads the records of the workspace at key unless they are
// known already.
func (s *Supervisor) loadOutbox(key string) {
	s.prompts.mu.Lock()
	defer s.prompts.mu.Unlock()
	_, _ = s.outboxLocked(key)
}

// forgetOutbox drops the outbox of a workspace whose agent was stopped
// for good; its records stay with the worktree (and go with it).
func (s *Supervisor) forgetOutbox(key string) {
	s.prompts.mu.Lock()
	delete(s.prompts.all, key)
	s.prompts.mu.Unlock()
}

// enqueue adds a prompt to the outbox of the workspace at key (add
// records it and puts it in place, or says why not) and hands it on:
// failed at once when the agent failed already, delivered now when it is
// ready, else when it is.
func (s *Supervisor) enqueue(key string, add func(*outbox) (*parcel, error)) (*parcel, error) {
	s.prompts.mu.Lock()
	ob, err := s.outboxLocked(key)
	var p *parcel
	if err == nil {
		p, err = add(ob)
	}
	s.prompts.mu.Unlock()
	if err != nil {
		return nil, err
	}
	attrs := []any{slog.String("workspace", key), slog.Int("bytes", len(p.prompt.Prompt))}
	if r := p.review; r != nil {
		attrs = append(attrs, slog.String("id", r.ID), slog.String("from", r.From), slog.Int("comments", r.Comments))
	}
	s.log.Info(p.what()+" queued", attrs...)
	// A prompt needs the agent: a hibernated one wakes, and the prompt
	// goes out when it is ready.
	if _, err := s.wakeStart(context.Background(), key, key); err != nil {
		s.log.Warn("cannot wake the agent for a "+p.what(), slog.String("workspace", key), slog.Any("err", err))
	}
	// An agent that failed already will not become ready by itself; the
	// prompt must not wait for it silently (setState fails it only on a
	// change). One waiting for a place of MaxAgents reports failed too,
	// but starts when a place frees up: its prompts wait for it.
	if st := s.AgentStatus(key); (st.State == workspace.AgentStateFailed || st.State == workspace.AgentStateNotFound) && !s.waitingForPlace(key) {
		s.failPending(key, st.Detail)
	}
	s.deliverIfReady(key)
	s.opts.OnChange(key)
	return p, nil
}

// deliveryOf is what became of p so far.
func (s *Supervisor) deliveryOf(p *parcel) workspace.PromptDelivery {
	s.prompts.mu.Lock()
	defer s.prompts.mu.Unlock()
	return p.delivery
}

// failPending fails the pending prompts of key, whose agent failed.
func (s *Supervisor) failPending(key, why string) {
	s.prompts.mu.Lock()
	defer s.prompts.mu.Unlock()
	ob := s.prompts.all[key]
	if ob == nil {
		return
	}
	ob.waiting = false
	for _, p := range ob.all() {
		if p.sending || p.delivery.State != workspace.DeliveryPending {
			continue
		}
		p.delivery = workspace.PromptDelivery{State: workspace.DeliveryFailed, Error: "the agent failed before it was ready: " + why}
		s.persistLocked(key, p)
		s.log.Warn(p.what()+" not delivered", slog.String("workspace", key), slog.String("why", why))
	}
}

// persistLocked rewrites the record of p; a failure is logged (the state
// in memory stands).
func (s *Supervisor) persistLocked(key string, p *parcel) {
	if err := writeRecord(p); err != nil {
		s.log.Warn("cannot record the "+p.what()+"'s delivery", slog.String("workspace", key), slog.Any("err", err))
	}
}

// deliverTimeout bounds one delivery: a session and an accepted prompt.
const deliverTimeout = 30 * time.Second

// deliverOnReady delivers the prompts of key to its agent, just ready
// (again), at its server's api: a retry that waits goes now.
func (s *Supervisor) deliverOnReady(ctx context.Context, key string, api agentAPI) {
	s.prompts.mu.Lock()
	if ob := s.prompts.all[key]; ob != nil {
		ob.waiting = false
	}
	s.prompts.mu.Unlock()
	s.deliver(ctx, key, api)
}

// deliverIfReady delivers the prompts of key if its agent is ready now; if
// it is not, its next ready does.
func (s *Supervisor) deliverIfReady(key string) {
	if port, password, ok := s.OpencodeServer(key); ok {
		s.deliver(context.Background(), key, newAgentAPI(s.opts.HTTPClient, port, password))
	}
}

// deliver hands the next prompt of key, if any, to the agent's server api
// in the background (finishDelivery then goes on with the one after). A
// prompt leaves "pending" for good once its sending is recorded.
func (s *Supervisor) deliver(ctx context.Context, key string, api agentAPI) {
	s.prompts.mu.Lock()
	ob := s.prompts.all[key]
	var p *parcel
	unrecorded := false
	for ob != nil && p == nil {
		next := ob.next()
		if next == nil {
			break
		}
		next.sending = true
		if err := writeRecord(next); err != nil {
			// Unrecorded, a crash of CodeHydra could send it twice.
			next.sending = false
			next.delivery = workspace.PromptDelivery{State: workspace.DeliveryFailed, Error: "cannot record the delivery: " + err.Error()}
			unrecorded = true
			continue
		}
		p = next
	}
	s.prompts.mu.Unlock()
	if unrecorded {
		s.opts.OnChange(key)
	}
	if p == nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deliverTimeout)
		defer cancel()
		var id string
		var sent bool
		var err error
		if p.review == nil {
			id, sent, err = api.sendPrompt(ctx, p.prompt, "")
		} else {
			id, sent, err = api.sendToCurrent(ctx, key, p.prompt)
		}
		s.finishDelivery(key, ob, p, id, sent, err)
	}()
}

// finishDelivery records how the delivery of p ended, and goes on with
// the next prompt unless p waits for its retry.
func (s *Supervisor) finishDelivery(key string, ob *outbox, p *parcel, id string, sent bool, err error) {
	s.prompts.mu.Lock()
	p.sending = false
	retry := !sent && err != nil && p.attempts+1 < sendAttempts
	switch {
	case err == nil:
		p.delivery = workspace.PromptDelivery{State: workspace.DeliveryDelivered, SessionID: id}
		s.log.Info(p.what()+" delivered", slog.String("workspace", key), slog.String("session", id))
	case retry:
		// Nothing went out: try again soon, or at the agent's next ready.
		p.attempts++
		ob.waiting = true
		wait := retryDelay(p.attempts)
		time.AfterFunc(wait, func() {
			s.prompts.mu.Lock()
			ob.waiting = false
			s.prompts.mu.Unlock()
			s.deliverIfReady(key)
		})
		s.log.Warn(p.what()+" not delivered yet; trying again", slog.String("workspace", key),
			slog.Duration("in", wait), slog.Any("err", err))
	default:
		p.delivery = workspace.PromptDelivery{State: workspace.DeliveryFailed, SessionID: id, Error: err.Error()}
		s.log.Warn(p.what()+" not delivered", slog.String("workspace", key), slog.Any("err", err))
	}
	s.persistLocked(key, p)
	s.prompts.mu.Unlock()
	s.opts.OnChange(key)
	if !retry {
		s.deliverIfReady(key)
	}
}

// QueuePrompt records the first prompt of the workspace at path and
// delivers it as soon as the workspace's agent is ready (at once if it is
// ready now). A workspace has at most one first prompt: a second one is a
// conflict. The prompt is recorded on disk before QueuePrompt returns.
func (s *Supervisor) QueuePrompt(path string, fp workspace.FirstPrompt) (workspace.PromptDelivery, error) {
	p, err := s.enqueue(filepath.Clean(path), func(ob *outbox) (*parcel, error) {
		file := filepath.Join(ob.gitDir, promptRecordName)
		if ob.first != nil || recordExists(file) {
			return nil, workspace.Errorf(workspace.CodeConflict, "the workspace %s has a first prompt already", path)
		}
		p := &parcel{prompt: fp, delivery: workspace.PromptDelivery{State: workspace.DeliveryPending}, file: file}
		if err := writeRecord(p); err != nil {
			return nil, err
		}
		ob.first = p
		return p, nil
	})
	if err != nil {
		return workspace.PromptDelivery{}, recordError("first prompt", path, err)
	}
	return s.deliveryOf(p), nil
}

// PromptDelivery reports what became of the first prompt of the workspace
// at path; false if it has none.
func (s *Supervisor) PromptDelivery(path string) (workspace.PromptDelivery, bool) {
	s.prompts.mu.Lock()
	defer s.prompts.mu.Unlock()
	ob, err := s.outboxLocked(filepath.Clean(path))
	if err != nil || ob.first == nil {
		return workspace.PromptDelivery{}, false
	}
	return ob.first.delivery, true
}
