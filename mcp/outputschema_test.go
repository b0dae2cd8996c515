package mcp

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The server does not validate its tools' output against their output
// schemas on every call (issue 16: that cost a third of a cheap call);
// these checks do it instead. Every harness runs checkOutputs, so every
// tool result of every test in this package is validated, and
// TestToolOutputsMatchSchemas makes sure each cheap tool's real success
// answer is among them.

// outputChecker validates the structuredContent of every tools/call
// result of a server against the output schema of the tool called.
type outputChecker struct {
	t   testing.TB
	srv *Server

	mu       sync.Mutex
	resolved map[string]*jsonschema.Resolved
	checked  map[string]int // successful results validated, by tool
}

// checkOutputs installs an outputChecker on srv, innermost, so that it
// sees what the tools answer before anything else does.
func checkOutputs(t testing.TB, srv *Server) *outputChecker {
	c := &outputChecker{t: t, srv: srv, resolved: map[string]*jsonschema.Resolved{}, checked: map[string]int{}}
	srv.mcp.AddReceivingMiddleware(c.middleware)
	return c
}

func (c *outputChecker) middleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		call, ok := req.(*sdk.CallToolRequest)
		r, isResult := res.(*sdk.CallToolResult)
		if method == "tools/call" && ok && isResult && err == nil {
			c.check(call.Params.Name, r)
		}
		return res, err
	}
}

func (c *outputChecker) check(tool string, r *sdk.CallToolResult) {
	def, own := c.srv.tools[tool]
	if !own || r.StructuredContent == nil {
		return
	}
	schema, key := def.tool.OutputSchema, tool
	if schema == nil {
		// A tool that answers text only still fails with docs/DESIGN.md's
		// structured error result.
		if !r.IsError {
			c.t.Errorf("%s has no output schema but answered structuredContent %s", tool, mustJSON(c.t, r.StructuredContent))
			return
		}
		schema, key = errorSchema(), "(error)"
	}
	resolved := c.schema(key, schema)
	data, err := json.Marshal(r.StructuredContent)
	if err != nil {
		c.t.Errorf("%s: encode structuredContent: %v", tool, err)
		return
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		c.t.Errorf("%s: structuredContent is not JSON: %v", tool, err)
		return
	}
	if err := resolved.Validate(&v); err != nil {
		c.t.Errorf("%s answered %s, which does not satisfy its output schema: %v", tool, data, err)
		return
	}
	if !r.IsError {
		c.mu.Lock()
		c.checked[tool]++
		c.mu.Unlock()
	}
}

func (c *outputChecker) schema(tool string, schema any) *jsonschema.Resolved {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.resolved[tool]; ok {
		return r
	}
	var s jsonschema.Schema
	data, err := json.Marshal(schema)
	if err == nil {
		err = json.Unmarshal(data, &s)
	}
	r, err2 := s.Resolve(nil)
	if err != nil || err2 != nil {
		c.t.Fatalf("output schema of %s: %v %v", tool, err, err2)
	}
	c.resolved[tool] = r
	return r
}

func (c *outputChecker) count(tool string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.checked[tool]
}

func TestToolOutputsMatchSchemas(t *testing.T) {
	h := newHarness(t)
	ws := h.create("feature")
	cs := h.session(ws.Path)
	user := h.session("")
	calls := []struct {
		cs   *sdk.ClientSession
		tool string
		args any
	}{
		{cs, ToolGetStatus, nil},
		{cs, ToolGetMetadata, nil},
		{cs, ToolProjectList, nil},
		{user, ToolProjectList, nil},
		{cs, ToolList, nil},
		{user, ToolList, nil},
		{cs, ToolAgentSession, nil},
		{cs, ToolListDirectory, map[string]any{"path": "."}},
		{cs, ToolReadFile, map[string]any{"path": "README.md"}},
		{cs, ToolGetContext, nil},
		{cs, ToolListTasks, nil},
		{cs, ToolCreate, map[string]any{"name": "second"}},
	}
	for _, c := range calls {
		if res := call(t, c.cs, c.tool, c.args); res.IsError {
			t.Fatalf("%s: %s", c.tool, text(t, res))
		}
		if h.outputs.count(c.tool) == 0 {
			t.Errorf("%s: its answer was not checked against its output schema", c.tool)
		}
	}
}
