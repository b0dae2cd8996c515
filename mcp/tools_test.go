package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// portAgents reports a fixed OpenCode port per workspace path.
type portAgents map[string]int

func (a portAgents) OpencodePort(path string) (int, bool) {
	p, ok := a[path]
	return p, ok
}

func TestToolsListHasDesignNamesSchemasAndDescriptions(t *testing.T) {
	h := newHarness(t)
	res, err := h.session("").ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*sdk.Tool{}
	for _, tool := range res.Tools {
		byName[tool.Name] = tool
	}
	want := []string{ToolGetStatus, ToolGetMetadata, ToolSetMetadata, ToolGetOpencodePort, ToolDelete,
		ToolProjectList, ToolCreate, ToolProjectAdd, ToolProjectRemove, ToolList, ToolAgentSession, ToolRestartAgent, ToolLog,
		ToolReadFile, ToolListDirectory, ToolGetContext, ToolListTasks, ToolRunTask, ToolGetDiff, ToolSendReview, ToolCreatePR,
		ToolMerge, ToolUpdateFromBase, ToolAnswer,
		ToolHibernate, ToolWake, ToolStopTask, ToolTaskOutput}
	got := slices.Sorted(func(yield func(string) bool) {
		for n := range byName {
			if !yield(n) {
				return
			}
		}
	})
	if !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	for _, tool := range res.Tools {
		if len(tool.Description) < 80 {
			t.Errorf("%s: description too thin for a model to decide: %q", tool.Name, tool.Description)
		}
		in := schemaMap(t, tool.InputSchema)
		if in["type"] != "object" {
			t.Errorf("%s: input schema type %v", tool.Name, in["type"])
		}
		hasOut := tool.OutputSchema != nil
		wantOut := tool.Name != ToolSetMetadata && tool.Name != ToolGetOpencodePort && tool.Name != ToolLog
		if hasOut != wantOut {
			t.Errorf("%s: has output schema %v, want %v", tool.Name, hasOut, wantOut)
		}
		if hasOut {
			if out := schemaMap(t, tool.OutputSchema); out["type"] != "object" {
				t.Errorf("%s: output schema type %v, want object", tool.Name, out["type"])
			}
		}
	}
	key := schemaMap(t, byName[ToolSetMetadata].InputSchema)["properties"].(map[string]any)["key"].(map[string]any)
	if key["pattern"] != metadataKeyPattern {
		t.Errorf("metadata key pattern %v", key["pattern"])
	}
	if req := schemaMap(t, byName[ToolCreate].InputSchema)["required"]; !jsonEqual(t, mustJSON(t, req), []byte(`["name"]`)) {
		t.Errorf("workspace_create requires %v", req)
	}
}

func TestWorkspaceToolsSucceedOnTheCallersWorkspace(t *testing.T) {
	var agents portAgents = map[string]int{}
	h := newHarness(t, func(o *Options) { o.Agents = agents })
	ws := h.create("feature/a")
	other := h.create("b")
	agents[ws.Path] = 4096
	cs := h.session(ws.Path)

	t.Run("status", func(t *testing.T) {
		var st map[string]any
		okJSON(t, call(t, cs, ToolGetStatus, nil), &st)
		if st["path"] != ws.Path || st["name"] != "feature/a" || st["projectPath"] != h.project || st["isDirty"] != false {
			t.Fatalf("status %v", st)
		}
		agent := st["agent"].(map[string]any)
		if agent["type"] != "none" || !jsonEqual(t, mustJSON(t, agent["counts"]), []byte(`{"idle":0,"busy":0,"total":0}`)) {
			t.Fatalf("agent %v", agent)
		}
		if err := os.WriteFile(filepath.Join(ws.Path, "new.txt"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		okJSON(t, call(t, cs, ToolGetStatus, nil), &st)
		if st["isDirty"] != true {
			t.Fatalf("status after a new file: %v", st)
		}
	})

	t.Run("metadata", func(t *testing.T) {
		getMetadata := func() map[string]string {
			var md map[string]string // fresh: decoding into a used map merges
			okJSON(t, call(t, cs, ToolGetMetadata, nil), &md)
			return md
		}
		md := getMetadata()
		if !mapsEqual(md, map[string]string{"base": "main"}) {
			t.Fatalf("metadata %v", md)
		}
		res := call(t, cs, ToolSetMetadata, map[string]any{"key": "ticket", "value": "ABC-1"})
		if got := text(t, res); got != "null" || res.IsError || res.StructuredContent != nil {
			t.Fatalf("set_metadata: text %q isError %v structured %v, want text null only", got, res.IsError, res.StructuredContent)
		}
		if md := getMetadata(); !mapsEqual(md, map[string]string{"base": "main", "ticket": "ABC-1"}) {
			t.Fatalf("metadata after set %v", md)
		}
		if got := testenv.Git(t, h.project, "config", "--get", "branch.feature/a.codehydra.ticket"); got != "ABC-1" {
			t.Fatalf("git config holds %q", got)
		}
		if got := text(t, call(t, cs, ToolSetMetadata, map[string]any{"key": "ticket", "value": nil})); got != "null" {
			t.Fatalf("delete answered %q", got)
		}
		if md := getMetadata(); !mapsEqual(md, map[string]string{"base": "main"}) {
			t.Fatalf("metadata after delete %v", md)
		}
	})

	t.Run("opencode port", func(t *testing.T) {
		res := call(t, cs, ToolGetOpencodePort, nil)
		if got := text(t, res); got != "4096" || res.StructuredContent != nil || res.IsError {
			t.Fatalf("port: text %q structured %v", got, res.StructuredContent)
		}
		res = call(t, h.session(other.Path), ToolGetOpencodePort, nil)
		if got := text(t, res); got != "null" || res.StructuredContent != nil || res.IsError {
			t.Fatalf("port without a server: text %q structured %v", got, res.StructuredContent)
		}
	})

	t.Run("project list", func(t *testing.T) {
		var out struct {
			Projects []struct {
				Name       string                `json:"name"`
				Path       string                `json:"path"`
				Workspaces []workspace.Workspace `json:"workspaces"`
			} `json:"projects"`
		}
		okJSON(t, call(t, h.session(""), ToolProjectList, nil), &out)
		if len(out.Projects) != 1 || out.Projects[0].Path != h.project || out.Projects[0].Name != "proj" {
			t.Fatalf("projects %+v", out.Projects)
		}
		var paths []string
		for _, w := range out.Projects[0].Workspaces {
			paths = append(paths, w.Path)
		}
		slices.Sort(paths)
		want := []string{ws.Path, other.Path}
		slices.Sort(want)
		if !slices.Equal(paths, want) {
			t.Fatalf("workspaces %v, want %v", paths, want)
		}
	})

	t.Run("create", func(t *testing.T) {
		var created workspace.Workspace
		okJSON(t, call(t, h.session(""), ToolCreate, map[string]any{"projectPath": h.project, "name": "from-mcp", "base": "main"}), &created)
		if created.Name != "from-mcp" || created.Branch != "from-mcp" || created.ProjectPath != h.project {
			t.Fatalf("created %+v", created)
		}
		if _, err := os.Stat(filepath.Join(created.Path, "README.md")); err != nil {
			t.Fatalf("new worktree: %v", err)
		}
		var st map[string]any
		okJSON(t, call(t, h.session(created.Path), ToolGetStatus, nil), &st)
		if st["path"] != created.Path {
			t.Fatalf("new workspace does not resolve: %v", st)
		}
	})

	t.Run("project add and remove", func(t *testing.T) {
		repo := testenv.GitRepo(t, "second")
		cs := h.session("")
		var p workspace.Project
		okJSON(t, call(t, cs, ToolProjectAdd, map[string]any{"path": repo}), &p)
		if p.Path != repo || p.Name != "second" {
			t.Fatalf("added %+v", p)
		}
		if !slices.ContainsFunc(h.mgr.Projects(), func(q workspace.Project) bool { return q.Path == repo }) {
			t.Fatal("manager does not list the added project")
		}
		var removed map[string]bool
		okJSON(t, call(t, cs, ToolProjectRemove, map[string]any{"path": repo}), &removed)
		if !removed["removed"] {
			t.Fatalf("remove answered %v", removed)
		}
		if slices.ContainsFunc(h.mgr.Projects(), func(q workspace.Project) bool { return q.Path == repo }) {
			t.Fatal("manager still lists the removed project")
		}
		if _, err := os.Stat(filepath.Join(repo, "README.md")); err != nil {
			t.Fatalf("remove touched the files: %v", err)
		}
	})
}

func TestOpencodePortIsNullWithoutAgents(t *testing.T) {
	h := newHarness(t)
	ws := h.create("a")
	if got := text(t, call(t, h.session(ws.Path), ToolGetOpencodePort, nil)); got != "null" {
		t.Fatalf("port %q, want null", got)
	}
}

func TestToolErrorsCarryDesignCodes(t *testing.T) {
	h := newHarness(t)
	ws := h.create("a")
	outside := t.TempDir()
	sibling := ws.Path + "-evil"
	if err := os.Mkdir(sibling, 0o755); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(ws.Path, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	linkOut := filepath.Join(t.TempDir(), "link-out")
	if err := os.Symlink(outside, linkOut); err != nil {
		t.Fatal(err)
	}
	linkIn := filepath.Join(t.TempDir(), "link-in")
	if err := os.Symlink(ws.Path, linkIn); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		header string
		tool   string
		args   map[string]any
		want   workspace.Code
	}{
		{"missing header", "", ToolGetStatus, nil, workspace.CodeInvalidInput},
		{"missing header on delete", "", ToolDelete, nil, workspace.CodeInvalidInput},
		{"unknown folder", "/no/such/workspace", ToolGetStatus, nil, workspace.CodeWorkspaceNotFound},
		{"project's main checkout", h.project, ToolGetStatus, nil, workspace.CodeWorkspaceNotFound},
		{"relative path", "proj/workspaces/a", ToolGetStatus, nil, workspace.CodeInvalidInput},
		{"dot-dot back into the workspace", ws.Path + "/../" + filepath.Base(ws.Path), ToolGetStatus, nil, workspace.CodeInvalidInput},
		{"dot-dot out of the workspace", ws.Path + "/..", ToolGetMetadata, nil, workspace.CodeInvalidInput},
		{"sibling with the workspace as prefix", sibling, ToolGetStatus, nil, workspace.CodeWorkspaceNotFound},
		{"subfolder of the workspace", sub, ToolSetMetadata, map[string]any{"key": "k", "value": "v"}, workspace.CodeWorkspaceNotFound},
		{"symlink leading outside", linkOut, ToolGetStatus, nil, workspace.CodeWorkspaceNotFound},
		{"10 KB path", "/" + strings.Repeat("a", 10<<10), ToolGetStatus, nil, workspace.CodeInvalidInput},
		{"bad metadata key", ws.Path, ToolSetMetadata, map[string]any{"key": "1bad", "value": "x"}, workspace.CodeInvalidInput},
		{"metadata value missing", ws.Path, ToolSetMetadata, map[string]any{"key": "k"}, workspace.CodeInvalidInput},
		{"argument of the wrong type", ws.Path, ToolDelete, map[string]any{"keepBranch": "yes"}, workspace.CodeInvalidInput},
		{"unexpected argument", ws.Path, ToolGetStatus, map[string]any{"path": "/etc"}, workspace.CodeInvalidInput},
		{"create in an unknown project", "", ToolCreate, map[string]any{"projectPath": outside, "name": "x"}, workspace.CodeProjectNotFound},
		{"create with a bad name", "", ToolCreate, map[string]any{"projectPath": h.project, "name": "bad..name"}, workspace.CodeInvalidInput},
		{"create without a name", "", ToolCreate, map[string]any{"projectPath": h.project}, workspace.CodeInvalidInput},
		{"create an existing workspace", "", ToolCreate, map[string]any{"projectPath": h.project, "name": "a"}, workspace.CodeConflict},
		{"remove an unknown project", "", ToolProjectRemove, map[string]any{"path": outside}, workspace.CodeProjectNotFound},
		{"add a relative project", "", ToolProjectAdd, map[string]any{"path": "some/repo"}, workspace.CodeInvalidInput},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, msg := errCode(t, call(t, h.session(tc.header), tc.tool, tc.args))
			if code != tc.want {
				t.Fatalf("code %s (%s), want %s", code, msg, tc.want)
			}
		})
	}

	t.Run("symlink to the workspace is accepted", func(t *testing.T) {
		var st map[string]any
		okJSON(t, call(t, h.session(linkIn), ToolGetStatus, nil), &st)
		if st["path"] != ws.Path {
			t.Fatalf("status path %v, want %s", st["path"], ws.Path)
		}
	})
	t.Run("trailing slash is accepted", func(t *testing.T) {
		var st map[string]any
		okJSON(t, call(t, h.session(ws.Path+"/"), ToolGetStatus, nil), &st)
		if st["path"] != ws.Path {
			t.Fatalf("status path %v", st["path"])
		}
	})
	t.Run("header present but empty", func(t *testing.T) {
		hdr := h.authHeader(http.Header{WorkspaceHeader: {""}})
		cs := h.sessionWith(&headerTransport{base: newTransport(t), header: hdr})
		if code, _ := errCode(t, call(t, cs, ToolGetStatus, nil)); code != workspace.CodeInvalidInput {
			t.Fatalf("code %s", code)
		}
	})
	t.Run("header sent twice", func(t *testing.T) {
		hdr := h.authHeader(http.Header{})
		hdr.Add(WorkspaceHeader, ws.Path)
		hdr.Add(WorkspaceHeader, ws.Path)
		cs := h.sessionWith(&headerTransport{base: newTransport(t), header: hdr})
		if code, _ := errCode(t, call(t, cs, ToolGetStatus, nil)); code != workspace.CodeInvalidInput {
			t.Fatalf("code %s", code)
		}
	})
	t.Run("NUL byte, below HTTP", func(t *testing.T) {
		_, err := h.srv.resolve(http.Header{WorkspaceHeader: {ws.Path + "\x00"}})
		if code := workspace.CodeOf(err); code != workspace.CodeInvalidInput {
			t.Fatalf("code %s (%v)", code, err)
		}
	})
	t.Run("error results satisfy the advertised output schema", func(t *testing.T) {
		cs := h.session("")
		tools, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range tools.Tools {
			if tool.OutputSchema == nil {
				continue
			}
			res := call(t, cs, tool.Name, map[string]any{"unexpected": true})
			if !res.IsError {
				t.Fatalf("%s accepted an unexpected argument", tool.Name)
			}
			validate(t, tool.OutputSchema, res.StructuredContent)
		}
		var status map[string]any
		res := call(t, h.session(ws.Path), ToolGetStatus, nil)
		okJSON(t, res, &status)
		validate(t, findTool(t, tools.Tools, ToolGetStatus).OutputSchema, res.StructuredContent)
	})
}

// domain is Workspaces under another name: embedded as Workspaces, the
// field would hide the Workspaces method.
type domain = Workspaces

// countingWorkspaces counts calls of the actions (everything but Resolve).
type countingWorkspaces struct {
	domain
	actions atomic.Int64
}

func (c *countingWorkspaces) Status(ctx context.Context, p string) (workspace.Status, error) {
	c.actions.Add(1)
	return c.domain.Status(ctx, p)
}

func (c *countingWorkspaces) Metadata(ctx context.Context, p string) (map[string]string, error) {
	c.actions.Add(1)
	return c.domain.Metadata(ctx, p)
}

func (c *countingWorkspaces) SetMetadata(ctx context.Context, p, k string, v *string) error {
	c.actions.Add(1)
	return c.domain.SetMetadata(ctx, p, k, v)
}

func (c *countingWorkspaces) StartDelete(ctx context.Context, p string, o workspace.DeleteOptions) (func(context.Context) error, error) {
	c.actions.Add(1)
	return c.domain.StartDelete(ctx, p, o)
}

func TestUnresolvedWorkspaceNeverReachesAnAction(t *testing.T) {
	isolateGit(t)
	project := testenv.GitRepo(t, "proj")
	mgr := workspace.NewManager(workspace.Options{Projects: []string{project}, WorktreeRoot: t.TempDir()})
	if err := mgr.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	counting := &countingWorkspaces{domain: mgr}
	h := startHarness(t, counting, project)
	h.mgr = mgr
	ws := h.create("a")
	for _, header := range []string{"", "relative", ws.Path + "/..", "/no/such", project} {
		cs := h.session(header)
		for _, tool := range []string{ToolGetStatus, ToolGetMetadata, ToolSetMetadata, ToolDelete} {
			res := call(t, cs, tool, map[string]any{"key": "k", "value": "v"})
			if !res.IsError {
				t.Fatalf("%s with header %q succeeded", tool, header)
			}
		}
	}
	if n := counting.actions.Load(); n != 0 {
		t.Fatalf("%d actions ran for unresolved workspaces", n)
	}
	if _, err := os.Stat(ws.Path); err != nil {
		t.Fatalf("workspace touched: %v", err)
	}
}

// switchingTransport sends the X-Workspace-Path currently stored in path.
type switchingTransport struct {
	base  http.RoundTripper
	token string
	path  atomic.Pointer[string]
}

func (s *switchingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+s.token)
	r.Header.Set(WorkspaceHeader, *s.path.Load())
	return s.base.RoundTrip(r)
}

func TestEachRequestIsResolvedByItsOwnHeader(t *testing.T) {
	h := newHarness(t)
	a, b := h.create("a"), h.create("b")
	tr := &switchingTransport{base: newTransport(t), token: h.token.Value()}
	tr.path.Store(&a.Path)
	cs := h.sessionWith(tr)
	for i, ws := range []workspace.Workspace{a, b, a, b} {
		tr.path.Store(&ws.Path)
		var st map[string]any
		okJSON(t, call(t, cs, ToolGetStatus, nil), &st)
		if st["path"] != ws.Path {
			t.Fatalf("call %d: status of %v, want %s", i, st["path"], ws.Path)
		}
	}
}

func TestTwoClientsInterleavedSeeOnlyTheirOwnWorkspace(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.RateLimit, o.Burst = 1e6, 1e6 })
	a, b := h.create("alpha"), h.create("beta")
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, ws := range []workspace.Workspace{a, b} {
		cs := h.session(ws.Path)
		wg.Go(func() {
			errs <- ownWorkspaceOnly(cs, ws, 100)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	for _, ws := range []workspace.Workspace{a, b} {
		if got := testenv.Git(t, h.project, "config", "--get", "branch."+ws.Branch+".codehydra.owner"); !strings.HasPrefix(got, ws.Name+"-") {
			t.Errorf("%s: owner %q", ws.Name, got)
		}
	}
}

// ownWorkspaceOnly makes n calls that write and read the workspace's own
// metadata and status, failing on any sign of another workspace.
func ownWorkspaceOnly(cs *sdk.ClientSession, ws workspace.Workspace, n int) error {
	ctx := context.Background()
	last := ""
	for i := range n {
		var (
			res *sdk.CallToolResult
			err error
		)
		switch i % 3 {
		case 0:
			last = fmt.Sprintf("%s-%d", ws.Name, i)
			res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: ToolSetMetadata, Arguments: map[string]any{"key": "owner", "value": last}})
		case 1:
			res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: ToolGetMetadata, Arguments: map[string]any{}})
		case 2:
			res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: ToolGetStatus, Arguments: map[string]any{}})
		}
		if err != nil {
			return fmt.Errorf("%s call %d: %w", ws.Name, i, err)
		}
		if res.IsError {
			return fmt.Errorf("%s call %d: error %v", ws.Name, i, res.Content)
		}
		raw, _ := json.Marshal(res.StructuredContent)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		switch i % 3 {
		case 1:
			if m["owner"] != last {
				return fmt.Errorf("%s call %d: owner %v, want %s", ws.Name, i, m["owner"], last)
			}
		case 2:
			if m["path"] != ws.Path || m["name"] != ws.Name {
				return fmt.Errorf("%s call %d: status of %v", ws.Name, i, m["path"])
			}
		}
	}
	return nil
}

func TestRateLimitIsPerWorkspaceAndTool(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.RateLimit, o.Burst = 0.001, 3 })
	a, b := h.create("a"), h.create("b")
	ca := h.session(a.Path)
	for i := range 3 {
		if res := call(t, ca, ToolGetStatus, nil); res.IsError {
			t.Fatalf("call %d within the burst failed: %s", i, text(t, res))
		}
	}
	if code, _ := errCode(t, call(t, ca, ToolGetStatus, nil)); code != workspace.CodeRateLimited {
		t.Fatalf("call past the burst: %s, want rate-limited", code)
	}
	if res := call(t, ca, ToolGetMetadata, nil); res.IsError {
		t.Fatalf("another tool of the same workspace was limited: %s", text(t, res))
	}
	if res := call(t, h.session(b.Path), ToolGetStatus, nil); res.IsError {
		t.Fatalf("another workspace was limited: %s", text(t, res))
	}
	// Calls with an unknown workspace share one bucket, so they are limited
	// too instead of hammering the file system.
	bad := h.session("/no/such")
	codes := []workspace.Code{}
	for range 4 {
		code, _ := errCode(t, call(t, bad, ToolGetStatus, nil))
		codes = append(codes, code)
	}
	if codes[3] != workspace.CodeRateLimited {
		t.Fatalf("unresolved calls: %v", codes)
	}
}

// slowWorkspaces blocks Status until the call's context ends, and fails
// Metadata with an unclassified error.
type slowWorkspaces struct{ domain }

func (slowWorkspaces) Status(ctx context.Context, _ string) (workspace.Status, error) {
	<-ctx.Done()
	return workspace.Status{}, &workspace.Error{Code: workspace.CodeInternal, Message: "git status was killed", Err: ctx.Err()}
}

func (slowWorkspaces) Metadata(context.Context, string) (map[string]string, error) {
	return nil, errors.New("disk on fire")
}

func TestSlowCallTimesOutAndUnclassifiedFailureIsInternal(t *testing.T) {
	isolateGit(t)
	project := testenv.GitRepo(t, "proj")
	mgr := workspace.NewManager(workspace.Options{Projects: []string{project}, WorktreeRoot: t.TempDir()})
	if err := mgr.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, slowWorkspaces{mgr}, project, func(o *Options) { o.CallTimeout = 100 * time.Millisecond })
	h.mgr = mgr
	cs := h.session(h.create("a").Path)

	start := time.Now()
	code, msg := errCode(t, call(t, cs, ToolGetStatus, nil))
	if code != workspace.CodeTimeout {
		t.Fatalf("slow call: %s (%s), want timeout", code, msg)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("timeout took %s", d)
	}
	code, msg = errCode(t, call(t, cs, ToolGetMetadata, nil))
	if code != workspace.CodeInternal || !strings.Contains(msg, "disk on fire") {
		t.Fatalf("failing call: %s (%s), want internal-error", code, msg)
	}
}

func TestUnknownToolIsAProtocolError(t *testing.T) {
	h := newHarness(t)
	_, err := h.session("").CallTool(context.Background(), &sdk.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Fatalf("err %v, want unknown tool", err)
	}
}

func BenchmarkToolCall(b *testing.B) {
	h := newHarness(b, func(o *Options) { o.RateLimit, o.Burst = 1e9, 1e9 })
	ws := h.create("bench")
	cs := h.session(ws.Path)
	for _, tool := range []string{ToolProjectList, ToolGetMetadata, ToolGetStatus} {
		b.Run(tool, func(b *testing.B) {
			params := &sdk.CallToolParams{Name: tool, Arguments: map[string]any{}}
			for b.Loop() {
				res, err := cs.CallTool(context.Background(), params)
				if err != nil || res.IsError {
					b.Fatalf("%v %v", err, res)
				}
			}
		})
	}
}

func schemaMap(t testing.TB, s any) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(mustJSON(t, s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// validate checks v against a schema as a client sees it (plain JSON).
func validate(t testing.TB, schema, v any) {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal(mustJSON(t, schema), &s); err != nil {
		t.Fatal(err)
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	var inst any
	if err := json.Unmarshal(mustJSON(t, v), &inst); err != nil {
		t.Fatal(err)
	}
	if err := resolved.Validate(inst); err != nil {
		t.Fatalf("%s does not satisfy the output schema: %v", mustJSON(t, v), err)
	}
}

func findTool(t testing.TB, tools []*sdk.Tool, name string) *sdk.Tool {
	t.Helper()
	for _, tool := range tools {
		if tool.Name == name {
			return tool
		}
	}
	t.Fatalf("no tool %s", name)
	return nil
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
