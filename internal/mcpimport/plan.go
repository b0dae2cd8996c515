package mcpimport

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"codehydra/internal/settings"
)

// maxName is the longest server name settings accept.
const maxName = 32

var (
	badNameRE = regexp.MustCompile(`[^A-Za-z0-9_-]+`)
	// refRE is a reference CodeHydra fills in: a value holding one is not
	// a secret written out.
	refRE = regexp.MustCompile(`\{(env:[^}]*|workspace|workspace\.[^}]*|project\.[^}]*)\}`)
	// schemeRE is an Authorization-style value: the scheme stays written,
	// the credential after it becomes the variable.
	schemeRE = regexp.MustCompile(`^(?i)(bearer|basic|token) +(\S+)$`)
)

// SafeName makes a CodeHydra server name of another client's ("My
// Server" → "My-Server").
func SafeName(n string) string {
	s := badNameRE.ReplaceAllString(n, "-")
	for strings.Contains(s, "__") {
		s = strings.ReplaceAll(s, "__", "_")
	}
	s = strings.TrimLeft(s, "-_")
	if len(s) > maxName {
		s = s[:maxName]
	}
	s = strings.TrimRight(s, "_")
	if s == "" {
		return "server"
	}
	return s
}

// Convert is the server as CodeHydra saves it, and the environment
// variables the user has to set for it, sorted. Unless copyValues, each
// env or header value written out in the file (no reference in it: a
// token, as often as not) becomes {env:NAME} instead: an env value takes
// its key's name, a header value the server's and the header's
// (Authorization of github: GITHUB_AUTHORIZATION), after a scheme such as
// "Bearer " which stays.
func (f Found) Convert(copyValues bool) (settings.MCPServer, []string) {
	m := f.Server.Clone()
	var vars []string
	for _, n := range f.Needs {
		vars = append(vars, n.Var)
	}
	if !copyValues {
		for _, k := range slices.Sorted(maps.Keys(m.Env)) {
			if v := m.Env[k]; v != "" && !refRE.MatchString(v) {
				name := varName(k)
				if envNameRE.MatchString(k) {
					name = k
				}
				m.Env[k] = envRef(name)
				vars = append(vars, name)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(m.Headers)) {
			v := m.Headers[k]
			if v == "" || refRE.MatchString(v) {
				continue
			}
			name := varName(f.Name + "_" + k)
			if s := schemeRE.FindStringSubmatch(v); s != nil {
				m.Headers[k] = s[1] + " " + envRef(name)
			} else {
				m.Headers[k] = envRef(name)
			}
			vars = append(vars, name)
		}
	}
	slices.Sort(vars)
	return m, slices.Compact(vars)
}

// Check says why f cannot be imported, with the settings' own checks, or
// nil.
func (f Found) Check() error {
	if f.Problem != "" {
		return errors.New(f.Problem)
	}
	m, _ := f.Convert(false)
	return errors.Join(m.Check(SafeName(f.Name))...)
}

// Choice is what becomes of one server picked for import.
type Choice struct {
	Found Found
	// Name is the name it is added under; Renamed, when not "", says why
	// it is not Found.Name.
	Name    string
	Renamed string
	Server  settings.MCPServer
	// Vars are the environment variables the user has to set for it.
	Vars []string
	// Refused, when not nil, is why it is not added.
	Refused error
}

// Plan decides what becomes of each picked server, in order, beside the
// existing ones: a server configured the same as one already there (or
// picked before it), with its values copied or not, is refused, a name that is taken gets a suffix ("-2"),
// and one that fails the settings' checks is refused with their reasons.
// copyValues is Convert's.
func Plan(picked []Found, existing map[string]settings.MCPServer, copyValues bool) []Choice {
	servers := maps.Clone(existing)
	if servers == nil {
		servers = map[string]settings.MCPServer{}
	}
	var out []Choice
	for _, f := range picked {
		c := Choice{Found: f}
		out = append(out, c)
		last := &out[len(out)-1]
		if f.Problem != "" {
			last.Refused = errors.New(f.Problem)
			continue
		}
		m, vars := f.Convert(copyValues)
		// Imported before with or without its values, it is the same server.
		other, _ := f.Convert(!copyValues)
		if same := cmp.Or(sameAs(servers, m), sameAs(servers, other)); same != "" {
			last.Refused = fmt.Errorf("the same server is configured already, as %s", same)
			continue
		}
		name := SafeName(f.Name)
		if name != f.Name {
			last.Renamed = fmt.Sprintf("named %s: a name holds only letters, digits, - and _ (one at a time), at most %d", name, maxName)
		}
		if _, taken := servers[name]; taken {
			free := freeName(servers, name)
			last.Renamed = fmt.Sprintf("named %s: %s is taken", free, name)
			name = free
		}
		if errs := m.Check(name); len(errs) > 0 {
			last.Refused = errors.Join(errs...)
			continue
		}
		last.Name, last.Server, last.Vars = name, m, vars
		servers[name] = m
	}
	return out
}

// sameAs is the name of a server in servers configured as m, or "".
func sameAs(servers map[string]settings.MCPServer, m settings.MCPServer) string {
	for _, n := range slices.Sorted(maps.Keys(servers)) {
		if servers[n].Equal(m) {
			return n
		}
	}
	return ""
}

// freeName is name with the first suffix -2, -3… that no server has.
func freeName(servers map[string]settings.MCPServer, name string) string {
	for i := 2; ; i++ {
		suffix := fmt.Sprintf("-%d", i)
		base := name
		if len(base)+len(suffix) > maxName {
			base = strings.TrimRight(base[:maxName-len(suffix)], "_")
		}
		if _, taken := servers[base+suffix]; !taken {
			return base + suffix
		}
	}
}
