// Package previews finds the endpoints of workspaces: the TCP ports that
// their processes listen on (the children of each workspace's agent, and
// its background runs, also those that left their tree but carry the
// agent's or the run's marker in their environment), to open in a browser.
// It reads the processes through netstat.ListeningMarked.
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
	// AgentProcess is the pid of the agent's process, the port of its
	// own server and the marker ("NAME=value") in the environment of
	// every process it starts, while it is ready.
	AgentProcess(path string) (pid, port int, marker string, ok bool)
}

// Root is a process whose whole tree belongs to a workspace, and the
// endpoint Source of what it listens on ("task:<name>"). Marker, when not
// "", is the entry ("NAME=value") in the environment of every process
// the root starts: one of them that left the tree is the workspace's too.
type Root struct {
	Pid            int
	Source, Marker string
}

// Options are what a Finder reads.
type Options struct {
	// Agents may be nil: no agent children are looked for.
	Agents Agents
	// Runs lists the processes of a workspace's running background runs;
	// nil lists none.
	Runs func(workspace string) []Root
	// Listening finds what process trees and marked processes listen
	// on; nil is netstat.ListeningMarked.
	Listening func(roots []int, markers []string) ([]netstat.Listener, error)
}

// Finder finds workspaces' endpoints.
type Finder struct{ o Options }

// New returns a Finder reading what o names.
func New(o Options) *Finder {
	if o.Listening == nil {
		o.Listening = netstat.ListeningMarked
	}
	return &Finder{o: o}
}

// Endpoints returns the endpoints of the workspaces at paths, by path,
// each list sorted by port; a workspace with none has no entry. The agent's
// own server is left out: every port that the process holding it listens
// on. Outside the trees, a process counts by the marker in its
// environment: one that cleared its environment is not found. One look at
// the system serves all the paths (it costs a few milliseconds, see
// netstat's benchmarks).
func (f *Finder) Endpoints(paths ...string) (map[string][]workspace.Endpoint, error) {
	type owner struct {
		path, source string
		agentPort    int // the agent's own port, for the agent's root
	}
	owners := map[int]owner{}    // by root pid
	marked := map[string]owner{} // by marker
	var roots []int
	var markers, agentMarkers []string // the runs' first: a run's process may carry its agent's too
	for _, path := range paths {
		path = filepath.Clean(path)
		if f.o.Agents != nil {
			if pid, port, marker, ok := f.o.Agents.AgentProcess(path); ok {
				owners[pid] = owner{path: path, source: workspace.SourceAgent, agentPort: port}
				roots = append(roots, pid)
				if marker != "" {
					marked[marker] = owner{path: path, source: workspace.SourceAgent}
					agentMarkers = append(agentMarkers, marker)
				}
			}
		}
		if f.o.Runs != nil {
			for _, r := range f.o.Runs(path) {
				owners[r.Pid] = owner{path: path, source: r.Source}
				roots = append(roots, r.Pid)
				if r.Marker != "" {
					marked[r.Marker] = owner{path: path, source: r.Source}
					markers = append(markers, r.Marker)
				}
			}
		}
	}
	markers = append(markers, agentMarkers...)
	if len(roots) == 0 {
		return map[string][]workspace.Endpoint{}, nil
	}
	found, err := f.o.Listening(roots, markers)
	if err != nil {
		return nil, err
	}
	ownerOf := func(l netstat.Listener) (owner, bool) {
		if l.Root == 0 {
			o, ok := marked[l.Marker]
			return o, ok
		}
		o, ok := owners[l.Root]
		return o, ok
	}
	servers := map[int]bool{} // the agents' own server processes
	for _, l := range found {
		if o := owners[l.Root]; o.agentPort != 0 && l.Port == o.agentPort {
			servers[l.Pid] = true
		}
	}
	out := map[string][]workspace.Endpoint{}
	for _, l := range found {
		o, ok := ownerOf(l)
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
