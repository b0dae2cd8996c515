package settings

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// Sandbox says how the processes CodeHydra starts for a workspace (its
// agent, tasks, setup and workspace-scoped MCP servers) are confined by
// the kernel (package sandbox). In the file it is an object, or just the
// mode as a string ("sandbox": "required").
type Sandbox struct {
	// Mode is "auto" (confine where the kernel can; the default),
	// "required" (what cannot be confined does not start) or "off".
	Mode string `json:"mode"`
	// Writable are more folders the confined processes may write, beside
	// their workspace, their temporary folder and the caches.
	Writable []string `json:"writable"`
	// Readable are more folders they may read, where a default or Hidden
	// cuts them out.
	Readable []string `json:"readable"`
	// Hidden are folders and files cut out of what they may read:
	// credentials by default (DefaultHidden). Setting it replaces the
	// defaults.
	Hidden []string `json:"hidden"`
	// UnixSockets lets confined processes connect to unix sockets by
	// path outside their sandbox, for docker or an ssh-agent. It re-opens
	// the way out through the session D-Bus (`systemd-run --user`). By
	// default (false) only sockets made inside the sandbox can be
	// reached: from Landlock ABI 9 by Landlock's rules, before it by a
	// seccomp filter that refuses to make unix sockets at all.
	UnixSockets bool `json:"unixSockets"`
}

// DefaultHidden are the credential stores of the home folder that
// confined processes cannot read unless the settings say otherwise: keys,
// tokens, password stores and browser profiles.
var DefaultHidden = []string{
	"~/.ssh", "~/.gnupg", "~/.aws", "~/.azure", "~/.config/gcloud", "~/.config/gh", "~/.docker",
	"~/.kube", "~/.netrc", "~/.git-credentials", "~/.password-store", "~/.local/share/keyrings",
	"~/.pki", "~/.mozilla", "~/.config/google-chrome", "~/.config/chromium",
}

// DefaultSandbox is the sandbox of settings that name none.
func DefaultSandbox() Sandbox {
	return Sandbox{Mode: "auto", Writable: []string{}, Readable: []string{}, Hidden: slices.Clone(DefaultHidden)}
}

// sandboxFields has the fields of Sandbox without its methods.
type sandboxFields Sandbox

// UnmarshalJSON takes the object, or a string that sets only the mode.
func (s *Sandbox) UnmarshalJSON(data []byte) error {
	var mode string
	if json.Unmarshal(data, &mode) == nil {
		s.Mode = mode
		return nil
	}
	f := sandboxFields(s.Clone())
	// A list the file does not name keeps its value; one it names
	// replaces it (json.Unmarshal would fill the old one in place).
	f.Writable, f.Readable, f.Hidden = nil, nil, nil
	if err := json.Unmarshal(data, &f); err != nil {
		return err
	}
	old := s.Clone()
	*s = Sandbox(f)
	if s.Writable == nil {
		s.Writable = old.Writable
	}
	if s.Readable == nil {
		s.Readable = old.Readable
	}
	if s.Hidden == nil {
		s.Hidden = old.Hidden
	}
	return nil
}

// Clone returns a copy that shares no slice with s.
func (s Sandbox) Clone() Sandbox {
	s.Writable, s.Readable, s.Hidden = cloneList(s.Writable), cloneList(s.Readable), cloneList(s.Hidden)
	return s
}

func cloneList(l []string) []string {
	if l == nil {
		return []string{}
	}
	return slices.Clone(l)
}

// Equal reports whether s and o say the same.
func (s Sandbox) Equal(o Sandbox) bool {
	return s.Mode == o.Mode && slices.Equal(s.Writable, o.Writable) && slices.Equal(s.Readable, o.Readable) &&
		slices.Equal(s.Hidden, o.Hidden) && s.UnixSockets == o.UnixSockets
}

// someHome stands for the home folder where a "~/" path is checked: any
// absolute path does, and on Windows an absolute path has a drive.
func someHome() string {
	if runtime.GOOS == "windows" {
		return `C:\Users\home`
	}
	return "/home"
}

// ExpandHome returns p with a leading "~/" (or "~") replaced by home.
func ExpandHome(p, home string) string {
	if p == "~" {
		return home
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return filepath.Join(home, rest)
	}
	return p
}

func (s Settings) validateSandbox() []error {
	var errs []error
	switch s.Sandbox.Mode {
	case "auto", "required", "off":
	default:
		errs = append(errs, fmt.Errorf("sandbox.mode is %q: use \"auto\", \"required\" or \"off\"", s.Sandbox.Mode))
	}
	for _, l := range []struct {
		key   string
		paths []string
	}{{"writable", s.Sandbox.Writable}, {"readable", s.Sandbox.Readable}, {"hidden", s.Sandbox.Hidden}} {
		for i, p := range l.paths {
			if err := checkSandboxPath(p); err != nil {
				errs = append(errs, fmt.Errorf("sandbox.%s[%d] %q %v", l.key, i, p, err))
			}
		}
	}
	return errs
}

// checkSandboxPath reports a path that is neither absolute nor in the
// home folder ("~/..."), or that is not clean.
func checkSandboxPath(p string) error {
	expanded := ExpandHome(p, someHome())
	switch {
	case strings.ContainsAny(p, "\x00\n\r"):
		return fmt.Errorf("holds a NUL or a line break: remove it")
	case !filepath.IsAbs(expanded):
		return fmt.Errorf("is not an absolute path: use an absolute path or one that starts with ~/")
	case strings.Contains(p+"/", "/./") || strings.Contains(p+"/", "/../") || strings.Contains(p, "//"):
		return fmt.Errorf("holds . or .. or doubled slashes: write it plainly, e.g. %s", filepath.Clean(expanded))
	}
	return nil
}
