package opencode

// Reviews (issue 23): a reviewer's comments, handed to a workspace's
// agent as one prompt in its current session, exactly once, as first
// prompts are (prompt.go).

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"codehydra/workspace"
)

// maxReviews is how many reviews of a workspace are kept, with their
// records: the newest, and those still waiting for the agent.
const maxReviews = 20

// reviewInfo is what a review's record keeps besides its prompt.
type reviewInfo struct {
	ID       string    `json:"id"`
	Seq      int       `json:"seq"`
	From     string    `json:"from,omitempty"`
	Comments int       `json:"comments"`
	Sent     time.Time `json:"sent"`
}

// SendReview records r (its Prompt) for the agent of the workspace at
// path and delivers it into the agent's current session (the top-level
// one updated last; a new one when it has none) as soon as the agent is
// ready, after the first prompt if that still waits. A review for an agent
// that failed fails at once, with the reason. The review is recorded on
// disk before SendReview returns. r.From is taken as it is (the MCP tool
// sets it); "" is the user's, as the tray's Review window sends it.
func (s *Supervisor) SendReview(path string, r workspace.Review) (workspace.ReviewDelivery, error) {
	if r.From == "" {
		r.From = workspace.ReviewFromUser
	}
	if err := workspace.CheckReview(r); err != nil {
		return workspace.ReviewDelivery{}, err
	}
	p, err := s.enqueue(filepath.Clean(path), func(ob *outbox) (*parcel, error) {
		if len(ob.reviews) >= maxReviews && pendingReviews(ob) == len(ob.reviews) {
			return nil, workspace.Errorf(workspace.CodeConflict,
				"%d reviews wait for the agent of %s already; send more once it has taken them (workspace_list shows their delivery)", maxReviews, path)
		}
		if err := os.MkdirAll(filepath.Join(ob.gitDir, reviewsDirName), 0o700); err != nil {
			return nil, err
		}
		seq := ob.lastSeq + 1
		p := &parcel{
			prompt:   workspace.FirstPrompt{Prompt: r.Prompt()},
			review:   &reviewInfo{ID: reviewID(seq), Seq: seq, From: r.From, Comments: len(r.Comments), Sent: s.opts.Now()},
			delivery: workspace.PromptDelivery{State: workspace.DeliveryPending},
			file:     reviewRecord(ob.gitDir, seq),
		}
		if err := writeRecord(p); err != nil {
			return nil, err
		}
		ob.lastSeq = seq
		ob.reviews = append(ob.reviews, p)
		s.pruneReviews(path, ob)
		return p, nil
	})
	if err != nil {
		return workspace.ReviewDelivery{}, recordError("review", path, err)
	}
	return reviewDelivery(p.review, s.deliveryOf(p)), nil
}

// pruneReviews forgets the oldest reviews that went out (delivered or
// failed), and their records, past maxReviews. A review still waiting is
// kept: SendReview takes no more while every kept one waits.
func (s *Supervisor) pruneReviews(path string, ob *outbox) {
	for len(ob.reviews) > maxReviews {
		i := 0
		for i < len(ob.reviews) && ob.reviews[i].delivery.State == workspace.DeliveryPending {
			i++
		}
		if i == len(ob.reviews) {
			return
		}
		if err := os.Remove(ob.reviews[i].file); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.log.Warn("cannot remove an old review's record", slog.String("workspace", path), slog.Any("err", err))
		}
		ob.reviews = append(ob.reviews[:i], ob.reviews[i+1:]...)
	}
}

// pendingReviews counts the reviews of ob that wait for the agent.
func pendingReviews(ob *outbox) int {
	n := 0
	for _, p := range ob.reviews {
		if p.delivery.State == workspace.DeliveryPending {
			n++
		}
	}
	return n
}

// Reviews is what became of the last reviews (at most maxReviews) sent to
// the agent of the workspace at path, oldest first; nil for none.
func (s *Supervisor) Reviews(path string) []workspace.ReviewDelivery {
	s.prompts.mu.Lock()
	defer s.prompts.mu.Unlock()
	ob, err := s.outboxLocked(filepath.Clean(path))
	if err != nil {
		return nil
	}
	var out []workspace.ReviewDelivery
	for _, p := range ob.reviews {
		out = append(out, reviewDelivery(p.review, p.delivery))
	}
	return out
}

func reviewDelivery(r *reviewInfo, d workspace.PromptDelivery) workspace.ReviewDelivery {
	return workspace.ReviewDelivery{ID: r.ID, State: d.State, SessionID: d.SessionID, Error: d.Error,
		From: r.From, Comments: r.Comments, Sent: r.Sent}
}

// recordError is err of recording a prompt (what) for path, said so
// unless it is the domain's own.
func recordError(what, path string, err error) error {
	if _, ok := errors.AsType[*workspace.Error](err); ok {
		return err
	}
	return fmt.Errorf("record the %s of %s: %w", what, path, err)
}
