package mcp

import (
	"slices"
	"strconv"
	"testing"

	"codehydra/internal/testenv"
	"codehydra/previews"
	"codehydra/workspace"
)

// sourcedPort is what an endpoint tells of whose port it is.
type sourcedPort struct {
	Source string
	Port   int
}

// ports are the sources and ports of endpoints.
func ports(eps []workspace.Endpoint) []sourcedPort {
	var out []sourcedPort
	for _, e := range eps {
		out = append(out, sourcedPort{e.Source, e.Port})
	}
	return out
}

// TestListEndpointsAnswersTheWorkspacesOwnServers: a workspace's token
// lists the servers its agent and its background run started, not the
// agent's own server nor another workspace's; it reads its child's too,
// not its sibling's; the user reads any.
func TestListEndpointsAnswersTheWorkspacesOwnServers(t *testing.T) {
	agents := testenv.TreeAgents{}
	runs := map[string]testenv.ServerTree{}
	f := newFamily(t, func(o *Options) {
		o.Endpoints = previews.New(previews.Options{Agents: agents, Runs: func(ws string) []previews.Root {
			if tree, ok := runs[ws]; ok {
				return []previews.Root{{Pid: tree.Pid, Source: "task:project:run"}}
			}
			return nil
		}})
	})
	agents[f.a.Path] = testenv.StartServerTree(t, f.a.Path)
	agents[f.child.Path] = testenv.StartServerTree(t, f.child.Path)
	runs[f.a.Path] = testenv.StartServerTree(t, f.a.Path)

	a := f.h.sessionAs(f.h.tokenOf(f.a.Path), f.a.Path)
	var out listEndpointsOutput
	okJSON(t, call(t, a, ToolListEndpoints, nil), &out)
	want := []sourcedPort{{"agent", agents[f.a.Path].ChildPort},
		{"task:project:run", runs[f.a.Path].OwnPort}, {"task:project:run", runs[f.a.Path].ChildPort}}
	slices.SortFunc(want, func(x, y sourcedPort) int { return x.Port - y.Port })
	if got := ports(out.Endpoints); !slices.Equal(got, want) {
		t.Fatalf("own endpoints %v, want %v (the agent's own port %d left out)", got, want, agents[f.a.Path].OwnPort)
	}
	if e := out.Endpoints[0]; e.URL != "http://127.0.0.1:"+strconv.Itoa(e.Port) || e.Pid == 0 || e.Command == "" {
		t.Errorf("endpoint %+v: want its URL, pid and command", e)
	}

	okJSON(t, call(t, a, ToolListEndpoints, map[string]any{"workspace": f.child.Path}), &out)
	if got := ports(out.Endpoints); !slices.Equal(got, []sourcedPort{{"agent", agents[f.child.Path].ChildPort}}) {
		t.Errorf("the child's endpoints %v", got)
	}
	if code, msg := errCode(t, call(t, a, ToolListEndpoints, map[string]any{"workspace": f.sibling.Path})); code != workspace.CodeForbidden {
		t.Errorf("a sibling's endpoints: %s %q, want forbidden", code, msg)
	}

	okJSON(t, call(t, f.h.session(""), ToolListEndpoints, map[string]any{"workspace": f.sibling.Path}), &out)
	if len(out.Endpoints) != 0 {
		t.Errorf("the sibling runs nothing, yet %v", ports(out.Endpoints))
	}
	okJSON(t, call(t, f.h.session(f.child.Path), ToolListEndpoints, nil), &out)
	if len(out.Endpoints) != 1 {
		t.Errorf("the user's call on the child's header: %v", ports(out.Endpoints))
	}
}
