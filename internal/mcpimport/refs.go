package mcpimport

import (
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"codehydra/internal/settings"
)

var (
	envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	notVarRE  = regexp.MustCompile(`[^A-Z0-9_]+`)
	// claudeRefRE is Claude Code's ${NAME} and ${NAME:-default}.
	claudeRefRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}`)
	// vscodeRefRE is any of VS Code's ${…} variables.
	vscodeRefRE = regexp.MustCompile(`\$\{([^}]*)\}`)
	// opencodeFileRE is opencode's {file:path}; its {env:NAME} is
	// CodeHydra's own.
	opencodeFileRE = regexp.MustCompile(`\{file:([^}]*)\}`)
)

// varName makes an environment variable's name of s ("github-token" →
// GITHUB_TOKEN).
func varName(s string) string {
	v := strings.Trim(notVarRE.ReplaceAllString(strings.ToUpper(s), "_"), "_")
	switch {
	case v == "":
		return "VALUE"
	case v[0] >= '0' && v[0] <= '9':
		return "_" + v
	}
	return v
}

func envRef(name string) string { return "{env:" + name + "}" }

// need records that fd's value is now {env:v}, taken from what.
func (fd *Found) need(v, what string) string {
	if !slices.ContainsFunc(fd.Needs, func(n Need) bool { return n.Var == v }) {
		fd.Needs = append(fd.Needs, Need{Var: v, What: what})
	}
	return envRef(v)
}

func (fd *Found) note(format string, args ...any) {
	n := fmt.Sprintf(format, args...)
	if !slices.Contains(fd.Notes, n) {
		fd.Notes = append(fd.Notes, n)
	}
}

// claudeRefs turns Claude Code's ${NAME} into {env:NAME}; a default
// (${NAME:-default}) has no equivalent and is dropped, with a note.
func (fd *Found) claudeRefs(v string) string {
	return claudeRefRE.ReplaceAllStringFunc(v, func(ref string) string {
		m := claudeRefRE.FindStringSubmatch(ref)
		if m[2] != "" {
			fd.note("the default of ${%s:-…} is not kept: set %s", m[1], m[1])
		}
		return envRef(m[1])
	})
}

// vscodeRefs turns VS Code's variables into CodeHydra's: ${env:NAME} into
// {env:NAME}, ${workspaceFolder} into {workspace.path} (which makes the
// server one per workspace), ${userHome} into the home folder; an input
// (${input:id}, asked of the user by VS Code) or any other variable
// becomes an environment variable the user has to set.
func (fd *Found) vscodeRefs(v, home string, inputs map[string]string) string {
	return vscodeRefRE.ReplaceAllStringFunc(v, func(ref string) string {
		inner := ref[2 : len(ref)-1]
		kind, arg, _ := strings.Cut(inner, ":")
		switch {
		case kind == "env" && envNameRE.MatchString(arg):
			return envRef(arg)
		case kind == "input":
			what := fmt.Sprintf("VS Code asks for input %q", arg)
			if d := inputs[arg]; d != "" {
				what += " (" + d + ")"
			}
			return fd.need(varName(arg), what)
		case inner == "workspaceFolder":
			fd.Server.Scope = settings.ScopeWorkspace
			fd.note("it names the workspace folder: it runs once per workspace, in its sandbox, where the workspace's agent can read its env")
			return "{workspace.path}"
		case inner == "userHome" && home != "":
			return home
		case inner == "pathSeparator" || inner == "/":
			return string(filepath.Separator)
		}
		return fd.need(varName(inner), "VS Code fills in "+ref)
	})
}

// opencodeRefs keeps opencode's {env:NAME} (CodeHydra's own) and turns
// {file:path}, whose content CodeHydra does not read, into a variable.
func (fd *Found) opencodeRefs(v string) string {
	return opencodeFileRE.ReplaceAllStringFunc(v, func(ref string) string {
		p := opencodeFileRE.FindStringSubmatch(ref)[1]
		base := filepath.Base(p)
		return fd.need(varName(strings.TrimSuffix(base, filepath.Ext(base))), "opencode reads it from the file "+p)
	})
}

// mapValues applies conv to each value of m.
func mapValues(m map[string]string, conv func(string) string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	// In order, so that what conv records comes out the same each time.
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out[k] = conv(m[k])
	}
	return out
}

// sliceValues applies conv to each of s.
func sliceValues(s []string, conv func(string) string) []string {
	if len(s) == 0 {
		return nil
	}
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = conv(v)
	}
	return out
}
