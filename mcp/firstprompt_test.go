package mcp

import (
	"context"
	"strings"
	"sync"
	"testing"

	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// promptRecorder is a Prompts that keeps what it is given; its agents all
// last spoke with model.
type promptRecorder struct {
	model  string
	mu     sync.Mutex
	queued map[string]workspace.FirstPrompt
}

func (p *promptRecorder) RecentModel(context.Context, string) string { return p.model }

func (p *promptRecorder) QueuePrompt(path string, fp workspace.FirstPrompt) (workspace.PromptDelivery, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queued[path] = fp
	return workspace.PromptDelivery{State: workspace.DeliveryPending}, nil
}

func TestCreateRefusesABadFirstPromptAndCreatesNothing(t *testing.T) {
	rec := &promptRecorder{queued: map[string]workspace.FirstPrompt{}}
	h := newHarness(t, func(o *Options) { o.Prompts = rec })
	a := h.create("a")
	cs := h.sessionAs(h.tokenOf(a.Path), a.Path)
	for name, prompt := range map[string]any{
		"over 64 KiB":   strings.Repeat("x", MaxFirstPrompt+1),
		"over, as UTF8": strings.Repeat("é", MaxFirstPrompt/2+1),
		"empty":         "  ",
		"bad agent":     map[string]any{"prompt": "go", "agent": "../x"},
		"bad model":     map[string]any{"prompt": "go", "model": "no-slash"},
		"unknown key":   map[string]any{"prompt": "go", "modle": "a/b"},
		"a number":      42,
	} {
		code, msg := errCode(t, call(t, cs, ToolCreate, map[string]any{"name": "child", "initialPrompt": prompt}))
		if code != workspace.CodeInvalidInput {
			t.Errorf("%s: %s (%s), want invalid-input", name, code, msg)
		}
	}
	if got := testenv.Git(t, h.project, "branch", "--list", "child"); got != "" {
		t.Errorf("a refused create left branch %q", got)
	}
	if wss, _ := h.mgr.Workspaces(h.project); len(wss) != 1 {
		t.Errorf("workspaces after refused creates: %+v", wss)
	}
	if len(rec.queued) != 0 {
		t.Errorf("prompts queued: %+v", rec.queued)
	}
}

func TestCreateByAnAgentRecordsItsCreatorWhichItCannotChange(t *testing.T) {
	rec := &promptRecorder{model: "fake/m", queued: map[string]workspace.FirstPrompt{}}
	h := newHarness(t, func(o *Options) { o.Prompts = rec })
	a := h.create("a")
	cs := h.sessionAs(h.tokenOf(a.Path), a.Path)
	var out struct {
		workspace.Workspace
		Prompt *workspace.PromptDelivery `json:"prompt"`
	}
	okJSON(t, call(t, cs, ToolCreate, map[string]any{"name": "child", "initialPrompt": "do it"}), &out)
	if out.Prompt == nil || out.Prompt.State != workspace.DeliveryPending {
		t.Fatalf("answer's prompt = %+v, want pending", out.Prompt)
	}
	if got := rec.queued[out.Path]; got != (workspace.FirstPrompt{Prompt: "do it", Model: "fake/m"}) {
		t.Errorf("queued %+v, want the prompt with the caller's model", got)
	}
	if got := testenv.Git(t, h.project, "config", "--get", "branch.child.codehydra.createdby"); got != a.Path {
		t.Errorf("createdBy = %q, want %q", got, a.Path)
	}
	// Neither the child nor the creator may rewrite it.
	for _, ws := range []workspace.Workspace{out.Workspace, a} {
		c := h.sessionAs(h.tokenOf(ws.Path), ws.Path)
		for _, v := range []any{"/elsewhere", nil} {
			if code, msg := errCode(t, call(t, c, ToolSetMetadata, map[string]any{"key": "createdBy", "value": v})); code != workspace.CodeForbidden {
				t.Errorf("%s sets createdBy to %v: %s (%s), want forbidden", ws.Name, v, code, msg)
			}
		}
	}
	if got := testenv.Git(t, h.project, "config", "--get", "branch.child.codehydra.createdby"); got != a.Path {
		t.Errorf("createdBy after the attempts = %q, want %q", got, a.Path)
	}
	// The user's create records no creator.
	okJSON(t, call(t, h.sessionAs(h.token.Value(), a.Path), ToolCreate, map[string]any{"name": "mine"}), &out)
	if all := testenv.Git(t, h.project, "config", "--list"); strings.Contains(all, "branch.mine.codehydra.createdby") {
		t.Errorf("the user's workspace has a creator:\n%s", all)
	}
}
