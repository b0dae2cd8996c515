// Package previews finds the endpoints of workspaces: the TCP ports that
// their processes listen on (the children of each workspace's agent, and
// its background runs), to open in a browser. It reads the processes
// through netstat.Listening.
package previews

import (
	"fmt"
	"path/filepath"

	"codehydra/internal/netstat"
	"codehydra/workspace"
)

// Agents tells where a workspace's agent runs; the opencode supervisor
// implements it.
type Agents interface {
	// AgentProcess is the pid of the agent's process and the port of its
	// own server while it is ready.
	AgentProcess(path string) (pid, port int, ok bool)
}

// Root is a process whose whole tree belongs to a workspace, and the
// endpoint Source of what it listens on ("task:<name>").
type Root struct {
	Pid    int
	Source string
}

// Options are what a Finder reads.
type Options struct {
	// Agents may be nil: no agent children are looked for.
	Agents Agents
	// Runs lists the processes of a workspace's running background runs;
	// nil lists none.
	Runs func(workspace string) []Root
	// Listening finds what process trees listen on; nil is
	// netstat.Listening.
	Listening func(roots []int) ([]netstat.Listener, error)
}

// Finder finds workspaces' endpoints.
type Finder struct{ o Options }

// New returns a Finder reading what o names.
func New(o Options) *Finder {
	if o.Listening == nil {
		o.Listening = netstat.Listening
	}
	return &Finder{o: o}
}

// Endpoints returns the endpoints of the workspaces at paths, by path,
// each list sorted by port; a workspace with none has no entry. The agent's
// own server is left out: every port that the process holding it listens
// on. One look at the system serves all the paths (it costs a few
// milliseconds, see netstat's benchmark).
func (f *Finder) Endpoints(paths ...string) (map[string][]workspace.Endpoint, error) {
	type owner struct {
		path, source string
		agentPort    int // the agent's own port, for the agent's root
	}
	owners := map[int]owner{}
	var roots []int
	for _, path := range paths {
		path = filepath.Clean(path)
		if f.o.Agents != nil {
			if pid, port, ok := f.o.Agents.AgentProcess(path); ok {
				owners[pid] = owner{path: path, source: workspace.SourceAgent, agentPort: port}
				roots = append(roots, pid)
			}
		}
		if f.o.Runs != nil {
			for _, r := range f.o.Runs(path) {
				owners[r.Pid] = owner{path: path, source: r.Source}
				roots = append(roots, r.Pid)
			}
		}
	}
	if len(roots) == 0 {
		return map[string][]workspace.Endpoint{}, nil
	}
	found, err := f.o.Listening(roots)
	if err != nil {
		return nil, err
	}
	servers := map[int]bool{} // the agents' own server processes
	for _, l := range found {
		if o := owners[l.Root]; o.agentPort != 0 && l.Port == o.agentPort {
			servers[l.Pid] = true
		}
	}
	out := map[string][]workspace.Endpoint{}
	for _, l := range found {
		o, ok := owners[l.Root]
		if !ok || servers[l.Pid] {
			continue
		}
		out[o.path] = append(out[o.path], workspace.Endpoint{
			Port: l.Port, URL: fmt.Sprintf("http://127.0.0.1:%d", l.Port), Pid: l.Pid, Command: l.Command, Source: o.source,
		})
	}
	return out, nil
}

// Of returns the endpoints of the workspace at path, sorted by port.
func (f *Finder) Of(path string) ([]workspace.Endpoint, error) {
	all, err := f.Endpoints(path)
	return all[filepath.Clean(path)], err
}
