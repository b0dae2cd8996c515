//go:build unix

package opencode_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/internal/testenv"
	"codehydra/mcp"
	"codehydra/opencode"
	"codehydra/workspace"
)

// bearer adds a token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpAs is an MCP session with the stack's server as the workspace at
// path (its token).
func (st *realStack) mcpAs(t *testing.T, ctx context.Context, path string) *sdk.ClientSession {
	t.Helper()
	tok, err := st.token.ForWorkspace(path)
	if err != nil {
		t.Fatal(err)
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: st.srv.URL(), HTTPClient: &http.Client{Transport: bearer{tok}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestRealOpencodeAParentIsToldOfItsChildsRequestFirstAndItsAnswerGoesThrough(t *testing.T) {
	bin := testenv.RealOpencode(t)
	model := startModel(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := newRealStack(t, ctx, bin, model, realStackOptions{config: askBash,
		tune:    func(o *opencode.SupervisorOptions) { o.ReadyTimeout = 3 * time.Minute },
		tuneMCP: func(o *mcp.Options) { o.Answers = o.Agents.(mcp.Answers) }})
	events, unsubscribe := st.mgr.Subscribe()
	defer unsubscribe()
	esc := workspace.NewEscalator(workspace.EscalatorOptions{
		Agents: st.sup, Tell: st.sup.Tell,
		ParentOf: func(ctx context.Context, path string) (string, error) {
			md, err := st.mgr.Metadata(ctx, path)
			return md[workspace.MetadataCreatedBy], err
		},
		Setting: func() workspace.Escalation { return workspace.Escalation{ParentFirst: true, After: 10 * time.Minute} },
		Changed: func(string) {},
	})
	go esc.Run(ctx, events)

	parent, _ := st.readyAgent(t, ctx, "parent")
	child, err := st.mgr.Create(ctx, workspace.CreateOptions{ProjectPath: st.project, Name: "child"})
	if err != nil {
		t.Fatal(err)
	}
	// What workspace_create records when the parent's agent creates it.
	testenv.Git(t, child.Path, "config", "branch.child.codehydra.createdBy", parent.Path)
	st.mgr.Publish(workspace.Event{Kind: workspace.EventMetadataChanged, Workspace: child})
	st.sup.Start(child)
	api := st.waitReady(t, child, 0)

	turn := make(chan error, 1)
	go func() { turn <- api.prompt(ctx, api.newSession(), bashTurn) }()
	req := st.waitRequest(t, child, "the child's permission request")
	if got := esc.Mark(child.Path, st.sup.AgentStatus(child.Path)).Requests[0].Parent; got != parent.Path {
		t.Errorf("the request is held for %q, want the parent %s", got, parent.Path)
	}
	// The parent's agent gets the request as a prompt.
	testenv.WaitFor(t, "the parent's agent told", 2*time.Minute, func() bool {
		for _, r := range model.Requests() {
			if r.LastRole == "user" && strings.Contains(r.LastText, req.ID) && strings.Contains(r.LastText, "workspace_answer") {
				return true
			}
		}
		return false
	})

	// The parent answers through MCP, as its agent would.
	res, err := st.mcpAs(t, ctx, parent.Path).CallTool(ctx, &sdk.CallToolParams{Name: mcp.ToolAnswer, Arguments: map[string]any{
		"workspace": child.Path, "requestId": req.ID, "reply": map[string]any{"permission": "once"}}})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(res.StructuredContent); res.IsError || !strings.Contains(string(b), `"answered":true`) {
		t.Fatalf("workspace_answer = %s (error %v)", b, res.IsError)
	}
	endOf(t, turn, "the child's turn")
	testenv.WaitFor(t, "the request gone", 30*time.Second, func() bool { return len(st.sup.AgentStatus(child.Path).Requests) == 0 })
	var ran bool
	for _, r := range model.Requests() {
		ran = ran || r.LastRole == "tool" && strings.Contains(r.LastText, "hello")
	}
	if !ran {
		t.Error("the allowed command's output never reached the child's model")
	}
}
