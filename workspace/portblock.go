package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"codehydra/internal/atomicfile"
)

// Each workspace has a block of TCP ports of its own for its dev servers
// (docs/DESIGN.md "Dev servers and ports"). The block is recorded beside
// the token nonce, in git's admin folder of the worktree, so that it stays
// the workspace's across a restart of CodeHydra and goes with the worktree.

// PortsFile is the name of the record in a worktree's git admin folder;
// it holds the block as "first count".
const PortsFile = "codehydra-ports"

// PortBlock is a run of Count ports from First.
type PortBlock struct {
	First int `json:"first"`
	Count int `json:"count"`
}

// Ports lists the block's ports, lowest first.
func (b PortBlock) Ports() []int {
	out := make([]int, 0, b.Count)
	for p := b.First; p < b.First+b.Count; p++ {
		out = append(out, p)
	}
	return out
}

// Contains reports whether port is in the block.
func (b PortBlock) Contains(port int) bool { return port >= b.First && port < b.First+b.Count }

// Overlaps reports whether b and o share a port.
func (b PortBlock) Overlaps(o PortBlock) bool {
	return b.First < o.First+o.Count && o.First < b.First+b.Count
}

// Env is the block as the environment of what runs in the workspace (its
// agent, setup, tasks and teardown): CODEHYDRA_PORT (the first),
// CODEHYDRA_PORTS (all, comma-separated) and PORT (the first).
func (b PortBlock) Env() []string {
	if b.Count <= 0 {
		return nil
	}
	all := make([]string, 0, b.Count)
	for _, p := range b.Ports() {
		all = append(all, strconv.Itoa(p))
	}
	first := strconv.Itoa(b.First)
	return []string{"CODEHYDRA_PORT=" + first, "CODEHYDRA_PORTS=" + strings.Join(all, ","), "PORT=" + first}
}

func (b PortBlock) String() string {
	if b.Count == 1 {
		return strconv.Itoa(b.First)
	}
	return fmt.Sprintf("%d-%d", b.First, b.First+b.Count-1)
}

// RecordPorts records b as the port block of the linked worktree at wsPath.
func RecordPorts(wsPath string, b PortBlock) error {
	if b.First < 1 || b.Count < 1 || b.First+b.Count-1 > 65535 {
		return fmt.Errorf("port block %d+%d is not a run of ports", b.First, b.Count)
	}
	file, err := adminFile(wsPath, PortsFile)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(file, fmt.Appendf(nil, "%d %d\n", b.First, b.Count), 0o600); err != nil {
		return fmt.Errorf("record the ports of %s: %w", wsPath, err)
	}
	return nil
}

// ForgetPorts removes the record of RecordPorts; a worktree without one is
// not an error.
func ForgetPorts(wsPath string) error {
	file, err := adminFile(wsPath, PortsFile)
	if err != nil {
		return err
	}
	if err := os.Remove(file); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("forget the ports of %s: %w", wsPath, err)
	}
	return nil
}

// PortsOf returns the port block recorded for the linked worktree at
// wsPath; ok is false when it has none (or none that can be read).
func PortsOf(wsPath string) (b PortBlock, ok bool) {
	file, err := adminFile(wsPath, PortsFile)
	if err != nil {
		return PortBlock{}, false
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return PortBlock{}, false
	}
	if _, err := fmt.Sscanf(string(data), "%d %d", &b.First, &b.Count); err != nil ||
		b.First < 1 || b.Count < 1 || b.First+b.Count-1 > 65535 {
		return PortBlock{}, false
	}
	return b, true
}
