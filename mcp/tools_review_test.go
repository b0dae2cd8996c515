package mcp

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// answerOf calls tool on cs and decodes its answer, or returns the code
// and message of its error.
func answerOf[T any](t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) (out T, code workspace.Code, msg string) {
	t.Helper()
	res := call(t, cs, tool, args)
	if res.IsError {
		code, msg = errCode(t, res)
		return out, code, msg
	}
	okJSON(t, res, &out)
	return out, "", ""
}

// TestGetDiffForOneselfAParentsChildAndTheUserOnly: an agent sees its own
// changes and its children's; a sibling's, another project's, its
// parent's and a folder that is no workspace are one and the same
// refusal; the user sees any. What the deny list refuses is withheld.
func TestGetDiffForOneselfAParentsChildAndTheUserOnly(t *testing.T) {
	f := newFamily(t)
	for _, ws := range []workspace.Workspace{f.a, f.child, f.sibling, f.strange} {
		testenv.WriteFile(t, filepath.Join(ws.Path, "work-of-"+ws.Name+".txt"), "done by "+ws.Name+"\n")
	}
	testenv.WriteFile(t, filepath.Join(f.child.Path, ".env"), "TOKEN=hunter2\n")
	diffOf := func(token, header string, args map[string]any) (workspace.Diff, workspace.Code, string) {
		t.Helper()
		return answerOf[workspace.Diff](t, f.h.sessionAs(token, header), ToolGetDiff, args)
	}
	tokA, tokChild := f.h.tokenOf(f.a.Path), f.h.tokenOf(f.child.Path)

	own, code, msg := diffOf(tokA, "", nil)
	if code != "" || len(own.Files) != 1 || own.Files[0].Path != "work-of-featA.txt" || !strings.Contains(own.Patch, "+done by featA") || own.Base != "main" {
		t.Fatalf("A's own diff: %+v %s %s", own, code, msg)
	}

	child, code, msg := diffOf(tokA, "", map[string]any{"workspace": f.child.Path})
	if code != "" || !strings.Contains(child.Patch, "+done by child") || strings.Contains(child.Patch, "featA") {
		t.Fatalf("A on its child: %+v %s %s", child, code, msg)
	}
	if strings.Contains(child.Patch, "hunter2") {
		t.Fatalf("the child's .env reached the patch:\n%s", child.Patch)
	}
	withheld := false
	for _, fc := range child.Files {
		withheld = withheld || fc.Path == ".env" && fc.Withheld && fc.Additions == 0
	}
	if !withheld {
		t.Fatalf("the child's .env is not listed as withheld: %+v", child.Files)
	}

	var refusal string
	for name, target := range map[string]string{
		"a sibling":              f.sibling.Path,
		"another project's":      f.strange.Path,
		"a folder, no workspace": t.TempDir(),
	} {
		_, code, msg := diffOf(tokA, "", map[string]any{"workspace": target})
		msg = strings.ReplaceAll(msg, target, "<path>")
		if code != workspace.CodeForbidden || refusal != "" && msg != refusal {
			t.Errorf("A on %s: %s %q, want the one forbidden answer %q", name, code, msg, refusal)
		}
		refusal = msg
	}
	if _, code, _ := diffOf(tokChild, "", map[string]any{"workspace": f.a.Path}); code != workspace.CodeForbidden {
		t.Errorf("a child on its parent: %s, want forbidden", code)
	}
	if _, code, _ := diffOf(tokA, "", map[string]any{"workspace": "relative/path"}); code != workspace.CodeInvalidInput {
		t.Errorf("a relative path: %s, want invalid-input", code)
	}

	user, code, msg := diffOf(f.h.token.Value(), f.a.Path, map[string]any{"workspace": f.sibling.Path})
	if code != "" || !strings.Contains(user.Patch, "+done by sibling") {
		t.Fatalf("the user on a sibling: %+v %s %s", user, code, msg)
	}
}

// reviewRecorder is a Reviews that keeps what it is sent and answers
// each review pending.
type reviewRecorder struct {
	mu   sync.Mutex
	sent map[string][]workspace.Review
	got  map[string][]workspace.ReviewDelivery
}

func newReviewRecorder() *reviewRecorder {
	return &reviewRecorder{sent: map[string][]workspace.Review{}, got: map[string][]workspace.ReviewDelivery{}}
}

func (r *reviewRecorder) SendReview(path string, rv workspace.Review) (workspace.ReviewDelivery, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent[path] = append(r.sent[path], rv)
	d := workspace.ReviewDelivery{ID: fmt.Sprintf("r%d", len(r.sent[path])), State: workspace.DeliveryPending,
		From: rv.From, Comments: len(rv.Comments), Sent: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	r.got[path] = append(r.got[path], d)
	return d, nil
}

func (r *reviewRecorder) Reviews(path string) []workspace.ReviewDelivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got[path])
}

func (r *reviewRecorder) sentTo(path string) []workspace.Review {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.sent[path])
}

// TestSendReviewByAParentOnItsChildAndTheUserOnAny: an agent reviews the
// workspaces it created, as their reviewer; a sibling, another project's,
// its parent and a folder that is no workspace are one and the same
// refusal, and its own workspace is refused; the user reviews any. The
// audit line counts the review's comments and bytes, without its words,
// and workspace_list shows the last review to whom may see it.
func TestSendReviewByAParentOnItsChildAndTheUserOnAny(t *testing.T) {
	rec := newReviewRecorder()
	f := newFamily(t, func(o *Options) { o.Reviews = rec })
	tokA, tokChild, user := f.h.tokenOf(f.a.Path), f.h.tokenOf(f.child.Path), f.h.token.Value()
	send := func(token, header string, args map[string]any) (workspace.ReviewDelivery, workspace.Code, string) {
		t.Helper()
		return answerOf[workspace.ReviewDelivery](t, f.h.sessionAs(token, header), ToolSendReview, args)
	}
	const secret = "rename-this-secretly"
	review := map[string]any{"workspace": f.child.Path, "summary": "Nearly there.",
		"comments": []map[string]any{{"file": "src/a.go", "line": 12, "endLine": 14, "text": secret}, {"file": "README.md", "text": "typo"}}}

	d, code, msg := send(tokA, "", review)
	if code != "" || d.ID != "r1" || d.State != workspace.DeliveryPending || d.From != f.a.Path || d.Comments != 2 {
		t.Fatalf("A reviews its child: %+v %s %s", d, code, msg)
	}
	want := workspace.Review{Summary: "Nearly there.", From: f.a.Path, Comments: []workspace.ReviewComment{
		{File: "src/a.go", Line: 12, EndLine: 14, Text: secret}, {File: "README.md", Text: "typo"}}}
	if got := rec.sentTo(f.child.Path); len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Fatalf("sent %+v, want %+v", got, want)
	}

	var refusal string
	for name, target := range map[string]string{
		"a sibling":              f.sibling.Path,
		"another project's":      f.strange.Path,
		"a folder, no workspace": t.TempDir(),
	} {
		_, code, msg := send(tokA, "", with(review, "workspace", target))
		msg = strings.ReplaceAll(msg, target, "<path>")
		if code != workspace.CodeForbidden || refusal != "" && msg != refusal {
			t.Errorf("A on %s: %s %q, want the one forbidden answer %q", name, code, msg, refusal)
		}
		refusal = msg
	}
	if _, code, _ := send(tokChild, "", with(review, "workspace", f.a.Path)); code != workspace.CodeForbidden {
		t.Errorf("a child on its parent: %s, want forbidden", code)
	}
	if _, code, msg := send(tokA, "", with(review, "workspace", f.a.Path)); code != workspace.CodeForbidden || !strings.Contains(msg, "your own workspace") {
		t.Errorf("A on itself: %s %s, want forbidden, its own", code, msg)
	}

	for _, target := range []workspace.Workspace{f.sibling, f.a} {
		d, code, msg := send(user, f.a.Path, with(review, "workspace", target.Path))
		if code != "" || d.From != "user" {
			t.Fatalf("the user reviews %s: %+v %s %s", target.Name, d, code, msg)
		}
	}

	for name, args := range map[string]map[string]any{
		"a relative workspace": with(review, "workspace", "child"),
		"no workspace":         with(review, "workspace", ""),
		"nothing to send":      {"workspace": f.child.Path},
		"a blank summary":      {"workspace": f.child.Path, "summary": "  "},
		"a file outside":       with(review, "comments", []map[string]any{{"file": "../x.go", "text": "no"}}),
		"an absolute file":     with(review, "comments", []map[string]any{{"file": "/etc/passwd", "text": "no"}}),
		"an end before a line": with(review, "comments", []map[string]any{{"file": "a.go", "line": 5, "endLine": 2, "text": "no"}}),
		"a negative line":      with(review, "comments", []map[string]any{{"file": "a.go", "line": -1, "text": "no"}}),
		"an empty comment":     with(review, "comments", []map[string]any{{"file": "a.go", "text": ""}}),
		"a comment, no file":   with(review, "comments", []map[string]any{{"text": "no"}}),
		"too many comments":    with(review, "comments", slices.Repeat([]map[string]any{{"file": "a.go", "text": "x"}}, workspace.MaxReviewComments+1)),
		"too long":             with(review, "summary", strings.Repeat("x", workspace.MaxReviewBytes+1)),
		"not a review":         with(review, "comments", "fix it"),
	} {
		if _, code, msg := send(tokA, "", args); code != workspace.CodeInvalidInput {
			t.Errorf("%s: %s (%s), want invalid-input", name, code, msg)
		}
	}
	if got := rec.sentTo(f.child.Path); len(got) != 1 {
		t.Errorf("refused reviews reached the child: %+v", got[1:])
	}

	audit, err := os.ReadFile(f.h.audit)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(audit, []byte(secret)) {
		t.Fatalf("the audit log holds a review's text:\n%s", audit)
	}
	if !bytes.Contains(audit, []byte(`"tool":"workspace_send_review","outcome":"ok","durationMs":`)) ||
		!bytes.Contains(audit, fmt.Appendf(nil, `"review":{"comments":2,"bytes":%d}`, len("Nearly there.")+len(secret)+len("typo"))) {
		t.Fatalf("no audit line counts the review:\n%s", audit)
	}

	child := list(t, f, tokA, "")["child"]
	if child.Review == nil || child.Review.ID != "r1" || child.Review.From != f.a.Path {
		t.Errorf("A's list: the child's review %+v, want r1 from A", child.Review)
	}
	if e := list(t, f, tokA, "")["sibling"]; e.Review != nil {
		t.Errorf("A reads the review of a sibling it did not create: %+v", e.Review)
	}
	if e := list(t, f, user, "")["sibling"]; e.Review == nil || e.Review.From != "user" {
		t.Errorf("the user's list: the sibling's review %+v, want the user's", e.Review)
	}
}

func TestSendReviewWithoutAgentsIsAConflict(t *testing.T) {
	f := newFamily(t)
	res := call(t, f.h.sessionAs(f.h.tokenOf(f.a.Path), ""), ToolSendReview, map[string]any{"workspace": f.child.Path, "summary": "ok"})
	if code, msg := errCode(t, res); code != workspace.CodeConflict {
		t.Fatalf("%s %s, want conflict", code, msg)
	}
}

// TestTheUserNamesTheWorkspaceOfAReviewToolWithoutTheHeader: the tools
// that take a workspace argument act for the user on the workspace it
// names, with no X-Workspace-Path (as the inspector or `codehydra mcp`
// call them); with neither, each says to name one. A workspace's token
// still acts on its own workspace without either.
func TestTheUserNamesTheWorkspaceOfAReviewToolWithoutTheHeader(t *testing.T) {
	f := newFamily(t)
	testenv.WriteFile(t, filepath.Join(f.child.Path, "work.txt"), "done\n")
	user := f.h.sessionAs(f.h.token.Value(), "")
	d, code, msg := answerOf[workspace.Diff](t, user, ToolGetDiff, map[string]any{"workspace": f.child.Path})
	if code != "" || len(d.Files) != 1 || d.Files[0].Path != "work.txt" {
		t.Fatalf("the user's diff of the child without the header: %+v %s %s", d, code, msg)
	}
	pf, code, msg := answerOf[struct {
		Preflight workspace.Preflight `json:"preflight"`
	}](t, user, ToolMerge, map[string]any{"workspace": f.child.Path, "preflight": true})
	if code != "" || pf.Preflight.Workspace != f.child.Path || !slices.Equal(pf.Preflight.Uncommitted, []string{"work.txt"}) {
		t.Fatalf("the user's merge preflight of the child without the header: %+v %s %s", pf, code, msg)
	}
	for _, tool := range []string{ToolGetDiff, ToolSendReview, ToolMerge, ToolUpdateFromBase, ToolCreatePR} {
		args := map[string]any{}
		if tool == ToolUpdateFromBase {
			args["mode"] = "rebase"
		}
		res := call(t, user, tool, args)
		if code, msg := errCode(t, res); code != workspace.CodeInvalidInput || !strings.Contains(msg, "workspace") {
			t.Errorf("%s by the user naming no workspace: %s %q, want invalid-input asking for one", tool, code, msg)
		}
	}
	own, code, msg := answerOf[workspace.Diff](t, f.h.sessionAs(f.h.tokenOf(f.child.Path), ""), ToolGetDiff, nil)
	if code != "" || len(own.Files) != 1 {
		t.Fatalf("the child's own diff: %+v %s %s", own, code, msg)
	}
}
