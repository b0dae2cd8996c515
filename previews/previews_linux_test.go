package previews

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"codehydra/internal/netstat"
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

// TestEndpointsFindServersThatLeftTheTree: a server that an agent's shell
// put in the background before it ended (`python3 -m http.server 0 &`)
// has left the agent's tree but carries its marker: it is that
// workspace's endpoint, not another's, and a process with the marker of a
// workspace not asked about counts for none.
func TestEndpointsFindServersThatLeftTheTree(t *testing.T) {
	agentA := testenv.StartServerTreeWith(t, t.TempDir(), testenv.TreeOptions{Escape: true})
	agentB := testenv.StartServerTreeWith(t, t.TempDir(), testenv.TreeOptions{Escape: true})
	stranger := testenv.StartServerTreeWith(t, t.TempDir(), testenv.TreeOptions{Escape: true})
	inTree, err := netstat.Listening([]int{agentA.Pid, agentB.Pid, stranger.Pid})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range inTree {
		if l.Pid == agentA.EscapedPid || l.Pid == agentB.EscapedPid || l.Pid == stranger.EscapedPid {
			t.Fatalf("the escaped server %+v is still in its tree: the test proves nothing", l)
		}
	}

	f := New(Options{Agents: testenv.TreeAgents{"/ws/a": agentA, "/ws/b": agentB}})
	got, err := f.Endpoints("/ws/a", "/ws/b")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path  string
		agent testenv.ServerTree
	}{{"/ws/a", agentA}, {"/ws/b", agentB}} {
		want := []workspace.Endpoint{endpoint(c.agent.ChildPort, "agent"), endpoint(c.agent.EscapedPort, "agent")}
		slices.SortFunc(want, func(x, y workspace.Endpoint) int { return x.Port - y.Port })
		eps := got[c.path]
		for i := range eps {
			if eps[i].Port == c.agent.EscapedPort && (eps[i].Pid != c.agent.EscapedPid || !strings.Contains(eps[i].Command, "http.server")) {
				t.Errorf("%s: escaped endpoint %+v, want pid %d running http.server", c.path, eps[i], c.agent.EscapedPid)
			}
			eps[i].Pid, eps[i].Command = 0, ""
		}
		if !slices.Equal(eps, want) {
			t.Errorf("%s: endpoints\n got %+v\nwant %+v (own port %d, stranger's %d)", c.path, eps, want, c.agent.OwnPort, stranger.EscapedPort)
		}
	}
	if len(got) != 2 {
		t.Errorf("endpoints of %d workspaces, want 2: %+v", len(got), got)
	}
}
