package workspace

import (
	"regexp"
	"strings"
)

// MaxFirstPrompt is the largest first prompt, in bytes: a task, not a
// file's content (the new agent reads files itself).
const MaxFirstPrompt = 64 << 10

// FirstPromptAgentPattern and FirstPromptModelPattern are the shapes of a
// first prompt's agent (an opencode agent's name) and model
// ("provider/model"; the model part may have "/" of its own, e.g.
// openrouter's).
const (
	FirstPromptAgentPattern = `^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`
	FirstPromptModelPattern = `^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}/[A-Za-z0-9][A-Za-z0-9_.:@/-]{0,199}$`
)

var (
	firstPromptAgentRE = regexp.MustCompile(FirstPromptAgentPattern)
	firstPromptModelRE = regexp.MustCompile(FirstPromptModelPattern)
)

// CheckFirstPrompt says, as a CodeInvalidInput error, what makes p unfit
// to be given to a new agent; nil if nothing does. workspace_create and the
// New workspace dialog both check with it, so that both take the same
// prompts.
func CheckFirstPrompt(p FirstPrompt) error {
	switch {
	case strings.TrimSpace(p.Prompt) == "":
		return Errorf(CodeInvalidInput, "the first prompt is empty; give the new agent its task, or leave the prompt out")
	case len(p.Prompt) > MaxFirstPrompt:
		return Errorf(CodeInvalidInput, "the first prompt has %d bytes, more than the %d allowed; put the details in a file the new agent can read and refer to it", len(p.Prompt), MaxFirstPrompt)
	case p.Agent != "" && !firstPromptAgentRE.MatchString(p.Agent):
		return Errorf(CodeInvalidInput, "the agent %q is no opencode agent name (e.g. build or plan)", p.Agent)
	case p.Model != "" && !firstPromptModelRE.MatchString(p.Model):
		return Errorf(CodeInvalidInput, "the model %q is not provider/model (e.g. anthropic/claude-sonnet-4-5)", p.Model)
	}
	return nil
}
