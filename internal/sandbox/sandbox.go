// Package sandbox confines the processes CodeHydra starts for a workspace
// (its agent, its tasks, its setup, its own MCP server instances) to what
// they need, with the kernel drawing the line rather than CodeHydra's
// argument checks: on Linux, a Landlock domain of their own that every
// process they start inherits.
//
// Landlock only grants. A Policy therefore lists what may be read or
// written (Grants) and the folders cut out of those grants (Deny): a grant
// that contains a denied folder is replaced by grants of each of its
// entries but the denied ones, level by level down to the hole (see
// Expand). A grant inside a denied folder is an exception and stays, which
// is how a workspace inside CodeHydra's private data folder is its
// agent's to write while the rest of that folder is not.
//
// Go cannot run code between fork and exec, so a confined process starts
// as a short re-exec of CodeHydra's own binary (HelperCommand): it applies
// the policy to itself, reports what it enforced on a pipe, and execs the
// real program, which keeps the domain (see Command and RunHelper).
package sandbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Mode is the settings' sandbox mode.
type Mode string

// The modes.
const (
	// ModeAuto confines where the kernel can, and says so where it
	// cannot.
	ModeAuto Mode = "auto"
	// ModeRequired refuses to start what cannot be confined.
	ModeRequired Mode = "required"
	// ModeOff confines nothing.
	ModeOff Mode = "off"
)

// ParseMode checks a settings value; "" is ModeAuto.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case "":
		return ModeAuto, nil
	case ModeAuto, ModeRequired, ModeOff:
		return m, nil
	}
	return "", fmt.Errorf("sandbox mode %q: want %q, %q or %q", s, ModeAuto, ModeRequired, ModeOff)
}

// Access is what a grant allows.
type Access int

const (
	// Read allows reading files, listing folders and running programs.
	Read Access = iota + 1
	// Write allows Read and everything that changes files and folders:
	// writing, truncating, creating (files, folders, links, sockets,
	// FIFOs; no device nodes), removing, renaming and linking within
	// write grants.
	Write
	// Device allows reading, writing and ioctl on device files: the
	// terminals, /dev/null and the like.
	Device
	// GitWrite is Write without making symbolic links, sockets or FIFOs:
	// for the repository's git folders, where git itself makes none, and
	// where a link an agent made would lead CodeHydra's own git (which
	// appends to reflogs there, outside any sandbox) to write elsewhere.
	GitWrite
)

func (a Access) String() string {
	switch a {
	case Read:
		return "read"
	case Write:
		return "write"
	case Device:
		return "device"
	case GitWrite:
		return "git-write"
	}
	return fmt.Sprintf("access(%d)", int(a))
}

// Grant allows Access to the file or folder at Path and everything below it.
type Grant struct {
	Path   string `json:"path"`
	Access Access `json:"access"`
}

// Policy is what a confined process may reach.
type Policy struct {
	Grants []Grant `json:"grants"`
	// Deny are folders (or files) cut out of every grant that contains
	// them. A grant inside one of them stays.
	Deny []string `json:"deny,omitempty"`
	// UnixSockets lets the processes connect to unix sockets by path
	// outside their sandbox (settings sandbox.unixSockets): on kernels
	// before Landlock ABI 9 no filter refuses making unix sockets; from
	// ABI 9 on, every grant allows connecting to the sockets in it.
	// Without it, only sockets made inside the sandbox can be reached.
	UnixSockets bool `json:"unixSockets,omitempty"`
}

// Status is what was enforced on a process: by which Landlock ABI, or why
// nothing was.
type Status struct {
	Enforced bool `json:"enforced"`
	// ABI is the Landlock ABI version the rules were built for (the best
	// the kernel and go-landlock share), 0 when nothing was enforced.
	ABI int `json:"abi,omitempty"`
	// Reason says why a process is not confined.
	Reason string `json:"reason,omitempty"`
	// UnixSocketFilter says that a seccomp filter refuses to make unix
	// sockets (socket(AF_UNIX, …); socket pairs are still made): on
	// kernels before Landlock ABI 9, whose rules cannot refuse connecting
	// to a socket by its path, it keeps the processes from the session
	// D-Bus, an ssh-agent or X11.
	UnixSocketFilter bool `json:"unixSocketFilter,omitempty"`
	// Gaps says what is left unrestricted of what the policy asks for
	// (see GapsOf), "" when nothing is.
	Gaps string `json:"gaps,omitempty"`
}

// GapsOf says, in words, what a policy enforced with Landlock ABI abi
// leaves unrestricted: what a confined process can still reach. filter
// is whether the unix socket filter is in place (Status.UnixSocketFilter);
// allowed whether the policy lets the process connect to unix sockets
// by path (Policy.UnixSockets). "" when nothing is left out: from ABI 9
// on, or from ABI 6 on with the filter.
func GapsOf(abi int, filter, allowed bool) string {
	var gaps []string
	if abi < 3 {
		gaps = append(gaps, "truncating files by path (Landlock ABI 3)")
	}
	if abi < 5 {
		gaps = append(gaps, "ioctl on devices (ABI 5)")
	}
	if abi < 6 {
		if filter {
			gaps = append(gaps, "signals to processes outside the sandbox (ABI 6)")
		} else {
			gaps = append(gaps, "signals and abstract unix sockets to processes outside the sandbox (ABI 6)")
		}
	}
	const pathSockets = "connecting to unix sockets by path, such as the session D-Bus, an ssh-agent or X11"
	switch {
	case allowed:
		gaps = append(gaps, pathSockets+" (settings sandbox.unixSockets)")
	case abi < 9 && !filter:
		gaps = append(gaps, pathSockets+" (ABI 9, or a seccomp filter, which this system lacks)")
	}
	if len(gaps) == 0 {
		return ""
	}
	return "not restricted: " + strings.Join(gaps, "; ")
}

// WithUnixSockets is st for a policy that lets its processes connect to
// unix sockets by path (Policy.UnixSockets): no filter, and the gap said.
func (st Status) WithUnixSockets() Status {
	if !st.Enforced {
		return st
	}
	st.UnixSocketFilter = false
	st.Gaps = GapsOf(st.ABI, false, true)
	return st
}

// Check reports an error when p cannot be enforced as written: every
// path must be absolute and clean.
func (p Policy) Check() error {
	var errs []error
	for _, g := range p.Grants {
		if !isAbsClean(g.Path) {
			errs = append(errs, fmt.Errorf("grant %q: not an absolute, clean path", g.Path))
		}
		if g.Access < Read || g.Access > GitWrite {
			errs = append(errs, fmt.Errorf("grant %q: unknown access %d", g.Path, g.Access))
		}
	}
	for _, d := range p.Deny {
		if !isAbsClean(d) {
			errs = append(errs, fmt.Errorf("deny %q: not an absolute, clean path", d))
		}
	}
	return errors.Join(errs...)
}

func isAbsClean(p string) bool { return filepath.IsAbs(p) && filepath.Clean(p) == p }

// Within reports whether path is dir or below it (both clean and
// absolute; compared by whole path components).
func Within(path, dir string) bool {
	if path == dir {
		return true
	}
	if dir == string(filepath.Separator) {
		return strings.HasPrefix(path, dir)
	}
	return strings.HasPrefix(path, dir+string(filepath.Separator))
}

// Allows reports whether p grants access to path: path is within a grant
// with at least access, not in a hole cut into that grant and not a
// folder on the way to one. It is what Expand's rules amount to for a
// path that exists when the process starts.
func (p Policy) Allows(path string, access Access) bool {
	for _, g := range p.Grants {
		if !Within(path, g.Path) || !covers(g.Access, access) || slices.Contains(p.Deny, g.Path) {
			continue
		}
		cut := slices.ContainsFunc(p.Deny, func(d string) bool {
			// path is in a hole of g, or is a folder on the way to one
			// (Expand grants only its entries).
			return (Within(path, d) && !Within(g.Path, d)) || (d != path && Within(d, path))
		})
		if !cut {
			return true
		}
	}
	return false
}

// covers reports whether a grant of have allows want.
func covers(have, want Access) bool {
	switch want {
	case Read:
		return true
	case Write:
		return have == Write || have == GitWrite
	case Device:
		return have == Device || have == Write
	}
	return false
}
