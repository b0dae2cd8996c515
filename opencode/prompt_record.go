package opencode

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"codehydra/internal/atomicfile"
	"codehydra/workspace"
)

// The records of the prompts an agent is given (prompt.go), in the
// worktree's git admin folder: the first prompt's in promptRecordName, each
// review's in reviewsDirName/r<seq>.json. Each is 0600 (a prompt may hold
// anything the user typed) and written whole (atomicfile).
const (
	promptRecordName = "codehydra-first-prompt.json"
	reviewsDirName   = "codehydra-reviews"
)

// maxPromptRecord bounds what readRecord reads: a prompt is limited far
// below it.
const maxPromptRecord = 1 << 20

// promptRecord is a record on disk.
type promptRecord struct {
	Prompt   workspace.FirstPrompt    `json:"prompt"`
	Delivery workspace.PromptDelivery `json:"delivery"`
	// Sending is true while a delivery runs: found at a start of
	// CodeHydra, the prompt may have reached the agent.
	Sending  bool `json:"sending,omitempty"`
	Attempts int  `json:"attempts,omitempty"`
	// Review is a review's, absent from the first prompt's.
	Review *reviewInfo `json:"review,omitempty"`
}

// worktreeGitDir is the git admin folder of the worktree at path, as its
// .git file names it ("gitdir: <path>"). The main checkout (a .git folder)
// has none: it is no workspace.
func worktreeGitDir(path string) (string, error) {
	b, err := os.ReadFile(filepath.Join(path, ".git"))
	if err != nil {
		return "", fmt.Errorf("read the worktree's .git file: %w", err)
	}
	dir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	dir = strings.TrimSpace(dir)
	if !ok || dir == "" {
		return "", fmt.Errorf("%s/.git names no git folder", path)
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(path, dir)
	}
	return filepath.Clean(dir), nil
}

func recordExists(file string) bool {
	_, err := os.Lstat(file)
	return err == nil
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// reviewID is the ID of a workspace's seq-th review; reviewRecord the
// path of its record.
func reviewID(seq int) string { return "r" + strconv.Itoa(seq) }

func reviewRecord(gitDir string, seq int) string {
	return filepath.Join(gitDir, reviewsDirName, reviewID(seq)+".json")
}

// writeRecord writes p's record.
func writeRecord(p *parcel) error {
	b, err := json.Marshal(promptRecord{Prompt: p.prompt, Delivery: p.delivery, Sending: p.sending, Attempts: p.attempts, Review: p.review})
	if err != nil {
		return err
	}
	return atomicfile.Write(p.file, b, 0o600)
}

// readRecord reads the record in file; wasSending reports a delivery that
// ran when CodeHydra stopped.
func readRecord(file string) (p *parcel, wasSending bool, err error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	var r promptRecord
	if err := json.NewDecoder(io.LimitReader(f, maxPromptRecord)).Decode(&r); err != nil {
		return nil, false, fmt.Errorf("read %s: %w", file, err)
	}
	switch r.Delivery.State {
	case workspace.DeliveryPending, workspace.DeliveryDelivered, workspace.DeliveryFailed:
	default:
		return nil, false, fmt.Errorf("read %s: unknown delivery state %q", file, r.Delivery.State)
	}
	p = &parcel{prompt: r.Prompt, review: r.Review, delivery: r.Delivery, attempts: r.Attempts, file: file}
	return p, r.Sending && r.Delivery.State == workspace.DeliveryPending, nil
}

// readOutbox reads the records in gitDir: the first prompt's and the
// newest maxReviews reviews'. stale are the prompts whose delivery ran
// when CodeHydra stopped. A record that cannot be read is told to warn
// and left out.
func readOutbox(gitDir string, warn func(error)) (ob *outbox, stale []*parcel) {
	ob = &outbox{gitDir: gitDir}
	take := func(file string, review bool) *parcel {
		p, sending, err := readRecord(file)
		switch {
		case err != nil:
			if !isNotExist(err) {
				warn(err)
			}
			return nil
		case (p.review != nil) != review:
			warn(fmt.Errorf("%s is not the record it should be", file))
			return nil
		case sending:
			stale = append(stale, p)
		}
		return p
	}
	ob.first = take(filepath.Join(gitDir, promptRecordName), false)
	entries, err := os.ReadDir(filepath.Join(gitDir, reviewsDirName))
	if err != nil && !isNotExist(err) {
		warn(err)
	}
	var seqs []int
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		n, err := strconv.Atoi(strings.TrimPrefix(name, "r"))
		if ok && err == nil && n > 0 && reviewID(n) == name && e.Type().IsRegular() {
			seqs = append(seqs, n)
		}
	}
	slices.Sort(seqs)
	if len(seqs) > 0 {
		ob.lastSeq = seqs[len(seqs)-1]
	}
	for _, n := range seqs[max(0, len(seqs)-maxReviews):] {
		if p := take(reviewRecord(gitDir, n), true); p != nil {
			ob.reviews = append(ob.reviews, p)
		}
	}
	return ob, stale
}
