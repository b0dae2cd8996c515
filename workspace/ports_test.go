package workspace

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"codehydra/internal/testenv"
)

// nothingListens is PortsOptions.InUse for tests that pin which block
// comes next: on a busy machine a real check could skip one.
func nothingListens(int) bool { return false }

// portsManager is a manager with port blocks from o and one project.
func portsManager(t *testing.T, o PortsOptions, projects ...string) (*Manager, Project) {
	t.Helper()
	m, _ := newManager(t, Options{Ports: o, Projects: projects})
	if len(projects) > 0 {
		if err := m.Load(context.Background()); err != nil {
			t.Fatal(err)
		}
		return m, m.Projects()[0]
	}
	p, err := m.AddProject(context.Background(), testenv.GitRepo(t, "project"))
	if err != nil {
		t.Fatal(err)
	}
	return m, p
}

// blockOf is the block recorded for ws, which Manager.Ports must agree with.
func blockOf(t *testing.T, m *Manager, ws Workspace) PortBlock {
	t.Helper()
	rec, ok := PortsOf(ws.Path)
	got, note := m.Ports(ws.Path)
	if !ok || got == nil || *got != rec {
		t.Fatalf("%s: recorded block %v (%v), Manager.Ports %v (%q)", ws.Name, rec, ok, got, note)
	}
	return rec
}

func deleteWS(t *testing.T, m *Manager, ws Workspace) {
	t.Helper()
	if err := m.Delete(context.Background(), ws.Path, DeleteOptions{}); err != nil {
		t.Fatalf("delete %s: %v", ws.Name, err)
	}
}

func TestFiftyCreatesAndDeletesNeverHandOutAPortTwiceNorOverlap(t *testing.T) {
	m, p := portsManager(t, PortsOptions{First: 20000, Last: 20999, PerWorkspace: 10, CursorFile: filepath.Join(t.TempDir(), "cursor")})
	given := map[int]string{} // port → the workspace it was given to
	live := map[string]Workspace{}
	for i := range 50 {
		ws := create(t, m, p, fmt.Sprintf("ws-%02d", i))
		b := blockOf(t, m, ws)
		if b.Count != 10 || b.First < 20000 || b.First+b.Count-1 > 20999 {
			t.Fatalf("%s got %v, not a block of 10 in the range", ws.Name, b)
		}
		for _, port := range b.Ports() {
			if other, ok := given[port]; ok {
				t.Fatalf("port %d handed out to %s and again to %s", port, other, ws.Name)
			}
			given[port] = ws.Name
		}
		live[ws.Path] = ws
		// Keep a few alive while others go, as a day's work does.
		if i%3 != 0 {
			for path, old := range live {
				deleteWS(t, m, old)
				delete(live, path)
				break
			}
		}
		var blocks []PortBlock
		for _, w := range live {
			blocks = append(blocks, blockOf(t, m, w))
		}
		for a := range blocks {
			for b := a + 1; b < len(blocks); b++ {
				if blocks[a].Overlaps(blocks[b]) {
					t.Fatalf("live blocks %v and %v overlap", blocks[a], blocks[b])
				}
			}
		}
	}
}

func TestAFreedBlockComesBackOnlyAfterTheRestOfTheRange(t *testing.T) {
	m, p := portsManager(t, PortsOptions{First: 30000, Last: 30039, PerWorkspace: 10, InUse: nothingListens})
	a := create(t, m, p, "a")
	b := create(t, m, p, "b")
	deleteWS(t, m, a)
	c := create(t, m, p, "c")
	d := create(t, m, p, "d")
	e := create(t, m, p, "e")
	for ws, want := range map[Workspace]int{b: 30010, c: 30020, d: 30030, e: 30000} {
		if got := blockOf(t, m, ws); got.First != want {
			t.Errorf("%s got %v, want the block from %d", ws.Name, got, want)
		}
	}
}

func TestAWorkspaceBeyondAFullRangeWorksWithoutPortsAndSaysWhy(t *testing.T) {
	m, p := portsManager(t, PortsOptions{First: 30000, Last: 30019, PerWorkspace: 10, InUse: nothingListens})
	create(t, m, p, "a")
	create(t, m, p, "b")
	c := create(t, m, p, "c")
	if _, ok := PortsOf(c.Path); ok {
		t.Fatal("a workspace past a full range has a block recorded")
	}
	st, err := m.Status(context.Background(), c.Path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Ports != nil || !strings.Contains(st.PortsNote, "no block of 10 ports is free in 30000-30019 (settings ports)") {
		t.Fatalf("status ports %v, note %q", st.Ports, st.PortsNote)
	}
}

func TestABlockWithAPortSomethingListensOnIsSkipped(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port
	// The taken port is the last of the first block. It is asked about
	// for real (listenedOn); the ports of the second block are said free,
	// as on a quiet machine, so that another program listening near the
	// taken port cannot fail the test.
	free := func(port int) bool { return port > taken && port <= taken+5 }
	inUse := func(port int) bool { return !free(port) && listenedOn(port) }
	m, p := portsManager(t, PortsOptions{First: taken - 4, Last: taken + 5, PerWorkspace: 5, InUse: inUse})
	ws := create(t, m, p, "a")
	if got := blockOf(t, m, ws); got.First != taken+1 {
		t.Fatalf("got %v, want the block after the one holding the taken port %d", got, taken)
	}
}

func TestBlocksAndTheCursorSurviveARestart(t *testing.T) {
	o := PortsOptions{First: 30000, Last: 30099, PerWorkspace: 10, InUse: nothingListens, CursorFile: filepath.Join(t.TempDir(), "cursor")}
	m, p := portsManager(t, o)
	a := create(t, m, p, "a")
	b := create(t, m, p, "b")
	deleteWS(t, m, a)

	m2, _ := portsManager(t, o, p.Path)
	if got := blockOf(t, m2, b); got.First != 30010 {
		t.Fatalf("after a restart b has %v, want its block from 30010", got)
	}
	c := create(t, m2, p, "c")
	if got := blockOf(t, m2, c); got.First != 30020 {
		t.Fatalf("c got %v after a restart, want the block from 30020 (the cursor's), not a's freed one", got)
	}
}

func TestAWorkspaceMadeOutsideGetsABlockOfItsOwn(t *testing.T) {
	m, p := portsManager(t, PortsOptions{First: 30000, Last: 30099, PerWorkspace: 10, InUse: nothingListens})
	a := create(t, m, p, "a")
	outside := filepath.Join(realDir(t), "outside")
	testenv.Git(t, p.Path, "worktree", "add", "-q", "-b", "outside", outside)
	// A copied record must not make two workspaces share a block.
	if err := RecordPorts(outside, blockOf(t, m, a)); err != nil {
		t.Fatal(err)
	}
	m.poll(context.Background())
	got := blockOf(t, m, Workspace{Name: "outside", Path: outside})
	if got.Overlaps(blockOf(t, m, a)) {
		t.Fatalf("the worktree made outside kept %v, a's block", got)
	}
}
