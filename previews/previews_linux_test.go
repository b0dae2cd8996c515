package previews

import (
	"fmt"
	"slices"
	"testing"

	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// TestEndpointsAreTheWorkspacesOwn: a server the agent of a workspace
// started and its background run's servers are that workspace's
// endpoints, with their sources; the agent's own server is not, nor
// another workspace's server.
func TestEndpointsAreTheWorkspacesOwn(t *testing.T) {
	agentA, agentB := testenv.StartServerTree(t, t.TempDir()), testenv.StartServerTree(t, t.TempDir())
	run := testenv.StartServerTree(t, t.TempDir())
	f := New(Options{
		Agents: testenv.TreeAgents{"/ws/a": agentA, "/ws/b": agentB},
		Runs: func(ws string) []Root {
			if ws == "/ws/a" {
				return []Root{{Pid: run.Pid, Source: "task:project:run"}}
			}
			return nil
		},
	})
	got, err := f.Endpoints("/ws/a", "/ws/b", "/ws/none")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]workspace.Endpoint{
		"/ws/a": {
			endpoint(agentA.ChildPort, "agent"),
			endpoint(run.OwnPort, "task:project:run"),
			endpoint(run.ChildPort, "task:project:run"),
		},
		"/ws/b": {endpoint(agentB.ChildPort, "agent")},
	}
	slices.SortFunc(want["/ws/a"], func(x, y workspace.Endpoint) int { return x.Port - y.Port })
	for path, eps := range got {
		for i := range eps {
			if eps[i].Pid == 0 || eps[i].Command == "" {
				t.Errorf("%s: endpoint %+v has no pid or command", path, eps[i])
			}
			eps[i].Pid, eps[i].Command = 0, ""
		}
	}
	if len(got) != len(want) || !slices.Equal(got["/ws/a"], want["/ws/a"]) || !slices.Equal(got["/ws/b"], want["/ws/b"]) {
		t.Fatalf("endpoints\n got %+v\nwant %+v", got, want)
	}

	only, err := f.Of("/ws/b/")
	if err != nil {
		t.Fatal(err)
	}
	if len(only) != 1 || only[0].Port != agentB.ChildPort {
		t.Fatalf("Of(/ws/b/) = %+v, want the one server of b's agent on %d", only, agentB.ChildPort)
	}
}

func endpoint(port int, source string) workspace.Endpoint {
	return workspace.Endpoint{Port: port, URL: fmt.Sprintf("http://127.0.0.1:%d", port), Source: source}
}
