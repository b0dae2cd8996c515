package settings

import (
	"fmt"
	"path"
	"strings"
)

// CheckDenyPattern reports what is wrong with a workspaceDeny pattern: it
// must be a valid glob (path.Match), relative, inside the workspace and
// one line.
func CheckDenyPattern(p string) error {
	if err := checkRelPattern(p); err != nil {
		return fmt.Errorf("workspaceDeny: %w", err)
	}
	return nil
}

// checkRelPattern checks a pattern of files relative to a workspace
// (workspaceDeny, a server's paths).
func checkRelPattern(p string) error {
	name := strings.TrimSuffix(p, "/")
	switch {
	case strings.TrimSpace(name) == "":
		return fmt.Errorf("a pattern is empty: remove it")
	case strings.ContainsAny(p, "\x00\n\r"):
		return fmt.Errorf("the pattern %q holds a NUL or a line break: remove it", p)
	case strings.HasPrefix(p, "/") || strings.Contains(p, `\`):
		return fmt.Errorf("the pattern %q is not relative: write it with \"/\" and no leading \"/\", e.g. secrets/ or *.p12", p)
	case strings.Contains("/"+name+"/", "/../") || strings.Contains("/"+name+"/", "/./"):
		return fmt.Errorf("the pattern %q holds . or ..: name the files from the workspace's top", p)
	}
	if _, err := path.Match(name, ""); err != nil {
		return fmt.Errorf("the pattern %q is not a valid glob: %w", p, err)
	}
	return nil
}

func (s Settings) validateWorkspaceDeny() []error {
	var errs []error
	for _, p := range s.WorkspaceDeny {
		if err := CheckDenyPattern(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
