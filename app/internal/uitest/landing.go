package uitest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"codehydra/workspace"
)

// Landing is an in-memory reviewing and landing of workspaces: its Diff is
// a real manager's (Differ), the rest answers what the test sets and
// records what it was asked.
type Landing struct {
	// Differ answers Diff: a *workspace.Manager over a real repository.
	Differ interface {
		Diff(ctx context.Context, wsPath string, o workspace.DiffOptions) (workspace.Diff, error)
	}

	mu         sync.Mutex
	preflight  func(o workspace.MergeOptions) (workspace.Preflight, error)
	merge      func(o workspace.MergeOptions) (workspace.MergeResult, error)
	update     func(mode workspace.UpdateMode) (workspace.UpdateResult, error)
	pr         func() (workspace.PullRequest, error)
	sendErr    error
	reviews    map[string][]workspace.ReviewDelivery
	sent       []workspace.Review
	preflights []workspace.MergeOptions
	merges     []workspace.MergeOptions
	updates    []workspace.UpdateMode
	prs        []string
	// block, when set, holds each update and pull request until closed.
	block chan struct{}
}

// NewLanding is a Landing whose preflight answers that the merge can go.
// MergedHead is the workspace's head in what the Landing fake answers by
// default: its preflights' and the one its merges verified.
const MergedHead = "feedfacefeedface"

func NewLanding(differ interface {
	Diff(ctx context.Context, wsPath string, o workspace.DiffOptions) (workspace.Diff, error)
}) *Landing {
	return &Landing{
		Differ:  differ,
		reviews: map[string][]workspace.ReviewDelivery{},
		preflight: func(o workspace.MergeOptions) (workspace.Preflight, error) {
			return workspace.Preflight{Branch: "feat", Head: MergedHead, Target: "main", Strategy: o.Strategy, Ahead: 1, CanMerge: true}, nil
		},
		merge: func(o workspace.MergeOptions) (workspace.MergeResult, error) {
			return workspace.MergeResult{Merged: true, Verified: true, TargetHead: "0123456789abcdef", Head: MergedHead,
				Preflight: workspace.Preflight{Branch: "feat", Target: "main", Strategy: o.Strategy}}, nil
		},
		update: func(mode workspace.UpdateMode) (workspace.UpdateResult, error) {
			return workspace.UpdateResult{Base: "main", Mode: mode, OldHead: "1111111111", NewHead: "2222222222", Updated: true}, nil
		},
		pr: func() (workspace.PullRequest, error) {
			return workspace.PullRequest{Remote: "origin", Branch: "feat", Base: "main", Pushed: true, URL: "https://example.com/pr/1"}, nil
		},
	}
}

// OnPreflight, OnMerge, OnUpdate and OnPullRequest set what those answer.
func (l *Landing) OnPreflight(fn func(o workspace.MergeOptions) (workspace.Preflight, error)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.preflight = fn
}

func (l *Landing) OnMerge(fn func(o workspace.MergeOptions) (workspace.MergeResult, error)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.merge = fn
}

func (l *Landing) OnUpdate(fn func(mode workspace.UpdateMode) (workspace.UpdateResult, error)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.update = fn
}

func (l *Landing) OnPullRequest(fn func() (workspace.PullRequest, error)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pr = fn
}

// Block holds every update and pull request until the returned func is
// called.
func (l *Landing) Block() (release func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.block = make(chan struct{})
	ch := l.block
	return func() { close(ch) }
}

// FailSend makes SendReview fail with err (nil: succeed again).
func (l *Landing) FailSend(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sendErr = err
}

// Deliver sets the state of the review id sent to the workspace at path.
func (l *Landing) Deliver(path, id string, state workspace.DeliveryState, errText string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, r := range l.reviews[path] {
		if r.ID == id {
			l.reviews[path][i].State, l.reviews[path][i].Error = state, errText
		}
	}
}

// Sent, Preflights, Merges, Updates and PullRequests are what was asked,
// in order.
func (l *Landing) Sent() []workspace.Review {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.sent)
}

func (l *Landing) Preflights() []workspace.MergeOptions {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.preflights)
}

func (l *Landing) Merges() []workspace.MergeOptions {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.merges)
}

func (l *Landing) Updates() []workspace.UpdateMode {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.updates)
}

func (l *Landing) PullRequests() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.prs)
}

func (l *Landing) Diff(ctx context.Context, wsPath string, o workspace.DiffOptions) (workspace.Diff, error) {
	if l.Differ == nil {
		return workspace.Diff{}, errors.New("no diff in this test")
	}
	return l.Differ.Diff(ctx, wsPath, o)
}

func (l *Landing) SendReview(path string, r workspace.Review) (workspace.ReviewDelivery, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sendErr != nil {
		return workspace.ReviewDelivery{}, l.sendErr
	}
	l.sent = append(l.sent, r)
	d := workspace.ReviewDelivery{ID: fmt.Sprintf("review-%d", len(l.sent)), State: workspace.DeliveryPending,
		From: "user", Comments: len(r.Comments), Sent: time.Date(2026, 1, 2, 15, 4, 0, 0, time.UTC)}
	l.reviews[path] = append(l.reviews[path], d)
	return d, nil
}

func (l *Landing) Reviews(path string) []workspace.ReviewDelivery {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.reviews[path])
}

func (l *Landing) Preflight(_ context.Context, _ string, o workspace.MergeOptions) (workspace.Preflight, error) {
	l.mu.Lock()
	l.preflights = append(l.preflights, o)
	fn := l.preflight
	l.mu.Unlock()
	return fn(o)
}

func (l *Landing) Merge(_ context.Context, _ string, o workspace.MergeOptions) (workspace.MergeResult, error) {
	l.mu.Lock()
	l.merges = append(l.merges, o)
	fn := l.merge
	l.mu.Unlock()
	return fn(o)
}

func (l *Landing) UpdateFromBase(_ context.Context, _ string, mode workspace.UpdateMode) (workspace.UpdateResult, error) {
	l.mu.Lock()
	l.updates = append(l.updates, mode)
	fn, block := l.update, l.block
	l.mu.Unlock()
	if block != nil {
		<-block
	}
	return fn(mode)
}

func (l *Landing) CreatePullRequest(_ context.Context, path string, _ workspace.PullRequestOptions) (workspace.PullRequest, error) {
	l.mu.Lock()
	l.prs = append(l.prs, path)
	fn, block := l.pr, l.block
	l.mu.Unlock()
	if block != nil {
		<-block
	}
	return fn()
}
