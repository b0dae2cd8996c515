package workspace

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"

	"codehydra/internal/atomicfile"
)

// The Manager gives each workspace it knows a block of ports of its own
// for its dev servers (docs/DESIGN.md "Dev servers and ports"): on create,
// and for each workspace it finds (at load, or made outside the app) that
// has no block recorded (RecordPorts), or one that overlaps a block a
// known workspace holds. Blocks are handed out round-robin through the
// range from a cursor kept in a file, so that the block of a deleted
// workspace is handed out again only once the whole range has been: a
// dev server or a script that still uses its ports meets no new owner
// soon.

// PortsOptions say where port blocks come from; the zero value gives none.
type PortsOptions struct {
	// First and Last bound the range; PerWorkspace is the size of a block.
	First, Last, PerWorkspace int
	// CursorFile keeps the port the next search starts at, across
	// restarts; "" keeps it in memory only.
	CursorFile string
	// InUse reports whether something listens on port already; nil tries
	// to bind the port on 127.0.0.1.
	InUse func(port int) bool
}

// portBlocks hands out the blocks; a nil *portBlocks gives none.
type portBlocks struct {
	o   PortsOptions
	log *slog.Logger

	mu sync.Mutex
	// held are the blocks of the workspaces the Manager knows, by pathKey;
	// none says why a known workspace has none.
	held map[string]PortBlock
	none map[string]string
	// next is the port the next search starts at; 0 until read from
	// CursorFile.
	next int
}

func newPortBlocks(o PortsOptions, log *slog.Logger) *portBlocks {
	if o.PerWorkspace < 1 {
		return nil
	}
	if o.InUse == nil {
		o.InUse = listenedOn
	}
	return &portBlocks{o: o, log: log, held: map[string]PortBlock{}, none: map[string]string{}}
}

// assign gives the workspace at path its block: the one it holds, else
// its recorded one unless that overlaps another's, else a new one, which
// it records. A workspace for which no block is free works without one;
// the log and Manager.Ports say why.
func (p *portBlocks) assign(path string) {
	if p == nil {
		return
	}
	k := pathKey(path)
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.held[k]; ok {
		return
	}
	if b, ok := PortsOf(path); ok && !p.overlapsHeld(b) {
		p.held[k] = b
		delete(p.none, k)
		return
	}
	b, ok := p.take()
	if !ok {
		p.none[k] = fmt.Sprintf("no block of %d ports is free in %d-%d (settings ports): other workspaces hold them or other programs listen on them; widen the range or delete workspaces, then restart CodeHydra",
			p.o.PerWorkspace, p.o.First, p.o.Last)
		p.log.Warn("workspace gets no port block", "path", path, "why", p.none[k])
		return
	}
	if err := RecordPorts(path, b); err != nil {
		p.none[k] = "its port block could not be recorded: " + err.Error()
		p.log.Warn("workspace gets no port block", "path", path, "err", err)
		return
	}
	p.held[k] = b
	delete(p.none, k)
	p.log.Info("port block given", "path", path, "ports", b.String())
}

// release frees the block of a workspace the Manager no longer knows.
// Its record goes with the worktree's admin folder.
func (p *portBlocks) release(path string) {
	if p == nil {
		return
	}
	k := pathKey(path)
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.held, k)
	delete(p.none, k)
}

// why says why the workspace at path has no block; "" when it has one
// or the Manager gives none.
func (p *portBlocks) why(path string) string {
	if p == nil {
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.none[pathKey(path)]
}

func (p *portBlocks) overlapsHeld(b PortBlock) bool {
	for _, h := range p.held {
		if h.Overlaps(b) {
			return true
		}
	}
	return false
}

// take finds the next free block from the cursor on, round the range
// once, and moves the cursor past it. p.mu is held.
func (p *portBlocks) take() (PortBlock, bool) {
	per := p.o.PerWorkspace
	slots := (p.o.Last - p.o.First + 1) / per
	if slots < 1 {
		return PortBlock{}, false
	}
	// A cursor between two blocks (perWorkspace changed) goes on at the
	// block after it.
	start := (p.cursor() - p.o.First + per - 1) / per
	for i := range slots {
		b := PortBlock{First: p.o.First + (start+i)%slots*per, Count: per}
		if p.overlapsHeld(b) || p.inUse(b) {
			continue
		}
		p.moveCursor(b.First + per)
		return b, true
	}
	return PortBlock{}, false
}

func (p *portBlocks) inUse(b PortBlock) bool {
	for _, port := range b.Ports() {
		if p.o.InUse(port) {
			return true
		}
	}
	return false
}

// cursor is the port the next search starts at: the one CursorFile holds,
// or the range's first when it holds none in the range.
func (p *portBlocks) cursor() int {
	if p.next == 0 && p.o.CursorFile != "" {
		if b, err := os.ReadFile(p.o.CursorFile); err == nil {
			p.next, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
	}
	if p.next < p.o.First || p.next > p.o.Last {
		p.next = p.o.First
	}
	return p.next
}

func (p *portBlocks) moveCursor(port int) {
	p.next = port
	if p.o.CursorFile == "" {
		return
	}
	if err := atomicfile.Write(p.o.CursorFile, []byte(strconv.Itoa(port)+"\n"), 0o600); err != nil {
		p.log.Warn("cannot keep the port cursor; after a restart blocks are handed out from the range's start again", "err", err)
	}
}

// listenedOn reports whether port cannot be bound on 127.0.0.1: something
// listens on it there, or on every address.
func listenedOn(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return true
	}
	l.Close()
	return false
}

// Ports is the port block of the workspace at path, nil when it has none;
// note then says why, when the Manager knows. A block the Manager holds is
// the one it recorded (assign), and is answered from memory: reading the
// record (PortsOf) resolves the worktree's git folder, a dozen lstats and
// reads, which was most of workspace_get_status's own cost. The record is
// read for a workspace the Manager holds no block for (ports off in the
// settings, or a path it does not know).
func (m *Manager) Ports(path string) (b *PortBlock, note string) {
	if held, ok := m.ports.heldBlock(path); ok {
		return &held, ""
	}
	if rec, ok := PortsOf(path); ok {
		return &rec, ""
	}
	return nil, m.ports.why(path)
}

// heldBlock is the block held for the workspace at path.
func (p *portBlocks) heldBlock(path string) (PortBlock, bool) {
	if p == nil {
		return PortBlock{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	b, ok := p.held[pathKey(path)]
	return b, ok
}
