package opencode

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"codehydra/internal/atomicfile"
	"codehydra/workspace"
)

// promptRecordName is the first prompt's record in a worktree's git admin
// folder.
const promptRecordName = "codehydra-first-prompt.json"

// maxPromptRecord bounds what readPromptRecord reads: a prompt is limited
// far below it.
const maxPromptRecord = 1 << 20

// promptRecord is the record on disk.
type promptRecord struct {
	Prompt   workspace.FirstPrompt    `json:"prompt"`
	Delivery workspace.PromptDelivery `json:"delivery"`
	// Sending is true while a delivery runs: found at a start of
	// CodeHydra, the prompt may have reached the agent.
	Sending  bool `json:"sending,omitempty"`
	Attempts int  `json:"attempts,omitempty"`
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

func recordExists(gitDir string) bool {
	_, err := os.Lstat(filepath.Join(gitDir, promptRecordName))
	return err == nil
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// writePromptRecord writes pp's record, readable by the user only (a
// prompt may hold anything the user typed).
func writePromptRecord(gitDir string, pp *pendingPrompt, sending bool) error {
	b, err := json.Marshal(promptRecord{Prompt: pp.prompt, Delivery: pp.delivery, Sending: sending, Attempts: pp.attempts})
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(gitDir, promptRecordName), b, 0o600)
}

// readPromptRecord reads the record in gitDir; wasSending reports a
// delivery that ran when CodeHydra stopped.
func readPromptRecord(gitDir string) (pp *pendingPrompt, wasSending bool, err error) {
	f, err := os.Open(filepath.Join(gitDir, promptRecordName))
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	var r promptRecord
	if err := json.NewDecoder(io.LimitReader(f, maxPromptRecord)).Decode(&r); err != nil {
		return nil, false, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	switch r.Delivery.State {
	case workspace.DeliveryPending, workspace.DeliveryDelivered, workspace.DeliveryFailed:
	default:
		return nil, false, fmt.Errorf("read %s: unknown delivery state %q", f.Name(), r.Delivery.State)
	}
	pp = &pendingPrompt{prompt: r.Prompt, delivery: r.Delivery, attempts: r.Attempts, gitDir: gitDir}
	return pp, r.Sending && r.Delivery.State == workspace.DeliveryPending, nil
}
