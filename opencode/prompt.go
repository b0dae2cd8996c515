package opencode

// A new workspace's first prompt (workspace_create's initialPrompt): kept
// by the supervisor until the workspace's agent is ready, then handed to
// it exactly once.
//
// Exactly once, also across agent restarts and a crash of CodeHydra: the
// prompt is recorded in the worktree's git admin folder
// (<common dir>/worktrees/<name>/codehydra-first-prompt.json, 0600), which
// git removes with the worktree, and the record says "sending" before the
// prompt goes out. A record found "sending" at the next start of CodeHydra
// may or may not have reached the agent: it is reported failed rather
// than sent a second time.

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"codehydra/workspace"
)

// sendAttempts bounds how often a delivery that could not create a
// session (nothing sent yet) is tried: again after retryDelay while the
// agent stays ready, or at its next ready.
const sendAttempts = 3

// retryDelay is the wait before the n-th (from 1) retry of a delivery that
// sent nothing: 1 s, 2 s, 4 s, … An agent just ready may answer errors for
// a moment; without a retry its prompt would stay pending while it stays
// ready, as delivery otherwise runs only at a ready.
func retryDelay(n int) time.Duration { return time.Second << min(n-1, 5) }

// pendingPrompt is the first prompt of one workspace and its delivery.
type pendingPrompt struct {
	prompt   workspace.FirstPrompt
	delivery workspace.PromptDelivery
	sending  bool // a delivery runs; the record says so
	attempts int
	gitDir   string // the worktree's git admin folder, where the record is
}

// prompts are the first prompts the supervisor holds, by clean path.
type prompts struct {
	mu  sync.Mutex
	all map[string]*pendingPrompt
}

// QueuePrompt records the first prompt of the workspace at path and
// delivers it as soon as the workspace's agent is ready (at once if it is
// ready now). A workspace has at most one first prompt: a second one is a
// conflict. The prompt is recorded on disk before QueuePrompt returns.
func (s *Supervisor) QueuePrompt(path string, p workspace.FirstPrompt) (workspace.PromptDelivery, error) {
	key := filepath.Clean(path)
	gitDir, err := worktreeGitDir(key)
	if err != nil {
		return workspace.PromptDelivery{}, fmt.Errorf("record the first prompt of %s: %w", path, err)
	}
	pp := &pendingPrompt{prompt: p, delivery: workspace.PromptDelivery{State: workspace.DeliveryPending}, gitDir: gitDir}
	s.prompts.mu.Lock()
	if old := s.prompts.all[key]; old != nil || recordExists(gitDir) {
		s.prompts.mu.Unlock()
		return workspace.PromptDelivery{}, workspace.Errorf(workspace.CodeConflict, "the workspace %s has a first prompt already", path)
	}
	if err := writePromptRecord(gitDir, pp, false); err != nil {
		s.prompts.mu.Unlock()
		return workspace.PromptDelivery{}, fmt.Errorf("record the first prompt of %s: %w", path, err)
	}
	s.prompts.all[key] = pp
	s.prompts.mu.Unlock()
	s.log.Info("first prompt queued", slog.String("workspace", path), slog.Int("bytes", len(p.Prompt)))
	// An agent that failed already will not become ready by itself; the
	// prompt must not wait for it silently (setState fails it only on a
	// change).
	if st := s.AgentStatus(key); st.State == workspace.AgentStateFailed || st.State == workspace.AgentStateNotFound {
		s.failPrompt(key, st.Detail)
	}
	if port, password, ok := s.OpencodeServer(key); ok {
		s.deliverPrompt(context.Background(), key, newAgentAPI(s.opts.HTTPClient, port, password))
	}
	s.prompts.mu.Lock()
	defer s.prompts.mu.Unlock()
	return pp.delivery, nil
}

// PromptDelivery reports what became of the first prompt of the workspace
// at path; false if it has none.
func (s *Supervisor) PromptDelivery(path string) (workspace.PromptDelivery, bool) {
	key := filepath.Clean(path)
	s.loadPrompt(key)
	s.prompts.mu.Lock()
	defer s.prompts.mu.Unlock()
	pp := s.prompts.all[key]
	if pp == nil {
		return workspace.PromptDelivery{}, false
	}
	return pp.delivery, true
}

// loadPrompt reads the recorded first prompt of the workspace at key
// unless it is known already: after a restart of CodeHydra, a prompt still
// pending is delivered when the agent is ready, and one that was being
// sent is reported failed.
func (s *Supervisor) loadPrompt(key string) {
	s.prompts.mu.Lock()
	defer s.prompts.mu.Unlock()
	if s.prompts.all[key] != nil {
		return
	}
	gitDir, err := worktreeGitDir(key)
	if err != nil {
		return
	}
	pp, wasSending, err := readPromptRecord(gitDir)
	if err != nil {
		if !isNotExist(err) {
			s.log.Warn("cannot read the first prompt's record", slog.String("workspace", key), slog.Any("err", err))
		}
		return
	}
	if wasSending {
		pp.delivery = workspace.PromptDelivery{State: workspace.DeliveryFailed,
			Error: "CodeHydra stopped while it handed the prompt to the agent; it may or may not have arrived (see the agent's sessions), so it is not sent again"}
		s.persistLocked(key, pp)
	}
	s.prompts.all[key] = pp
}

// forgetPrompt drops the prompt of a workspace whose agent was stopped for
// good; its record stays with the worktree (and goes with it).
func (s *Supervisor) forgetPrompt(key string) {
	s.prompts.mu.Lock()
	delete(s.prompts.all, key)
	s.prompts.mu.Unlock()
}

// failPrompt fails a pending prompt of key whose agent failed.
func (s *Supervisor) failPrompt(key, why string) {
	s.prompts.mu.Lock()
	defer s.prompts.mu.Unlock()
	pp := s.prompts.all[key]
	if pp == nil || pp.sending || pp.delivery.State != workspace.DeliveryPending {
		return
	}
	pp.delivery = workspace.PromptDelivery{State: workspace.DeliveryFailed, Error: "the agent failed before it was ready: " + why}
	s.persistLocked(key, pp)
	s.log.Warn("first prompt not delivered", slog.String("workspace", key), slog.String("why", why))
}

// persistLocked rewrites the record of pp; a failure is logged (the state
// in memory stands).
func (s *Supervisor) persistLocked(key string, pp *pendingPrompt) {
	if err := writePromptRecord(pp.gitDir, pp, pp.sending); err != nil {
		s.log.Warn("cannot record the first prompt's delivery", slog.String("workspace", key), slog.Any("err", err))
	}
}

// deliverTimeout bounds one delivery: a session and an accepted prompt.
const deliverTimeout = 30 * time.Second

// deliverPrompt hands the pending prompt of key, if any, to the agent's
// server api in the background. Only one delivery runs per prompt, and a
// prompt leaves "pending" for good once its sending is recorded.
func (s *Supervisor) deliverPrompt(ctx context.Context, key string, api agentAPI) {
	s.prompts.mu.Lock()
	pp := s.prompts.all[key]
	if pp == nil || pp.sending || pp.delivery.State != workspace.DeliveryPending {
		s.prompts.mu.Unlock()
		return
	}
	pp.sending = true
	if err := writePromptRecord(pp.gitDir, pp, true); err != nil {
		// Unrecorded, a crash of CodeHydra could send it twice.
		pp.sending = false
		pp.delivery = workspace.PromptDelivery{State: workspace.DeliveryFailed, Error: "cannot record the delivery: " + err.Error()}
		s.prompts.mu.Unlock()
		s.opts.OnChange(key)
		return
	}
	p := pp.prompt
	s.prompts.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deliverTimeout)
		defer cancel()
		id, sent, err := api.sendPrompt(ctx, p)
		s.finishDelivery(key, pp, id, sent, err)
	}()
}

// finishDelivery records how a delivery ended.
func (s *Supervisor) finishDelivery(key string, pp *pendingPrompt, id string, sent bool, err error) {
	s.prompts.mu.Lock()
	pp.sending = false
	switch {
	case err == nil:
		pp.delivery = workspace.PromptDelivery{State: workspace.DeliveryDelivered, SessionID: id}
		s.log.Info("first prompt delivered", slog.String("workspace", key), slog.String("session", id))
	case !sent && pp.attempts+1 < sendAttempts:
		// Nothing went out: try again soon, or at the agent's next ready.
		pp.attempts++
		wait := retryDelay(pp.attempts)
		time.AfterFunc(wait, func() { s.retryPrompt(key) })
		s.log.Warn("first prompt not delivered yet; trying again", slog.String("workspace", key),
			slog.Duration("in", wait), slog.Any("err", err))
	default:
		pp.delivery = workspace.PromptDelivery{State: workspace.DeliveryFailed, SessionID: id, Error: err.Error()}
		s.log.Warn("first prompt not delivered", slog.String("workspace", key), slog.Any("err", err))
	}
	s.persistLocked(key, pp)
	s.prompts.mu.Unlock()
	s.opts.OnChange(key)
}

// retryPrompt delivers the pending prompt of key again if its agent is
// ready now; if it is not, its next ready does.
func (s *Supervisor) retryPrompt(key string) {
	if port, password, ok := s.OpencodeServer(key); ok {
		s.deliverPrompt(context.Background(), key, newAgentAPI(s.opts.HTTPClient, port, password))
	}
}
