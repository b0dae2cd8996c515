package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"codehydra/internal/testenv"
)

// The fuzzers of this file check the domain's input rules against oracles
// written independently of the implementation: docs/DESIGN.md's regular
// expression and limits, the file system's own idea of "the same folder",
// and git itself. Their seed corpora live under testdata/fuzz/<name>/;
// `make fuzz-short` runs each for a few seconds, `make soak` for longer.

// resolveFixture is a project with two workspaces and the paths an
// attacker would try around them.
type resolveFixture struct {
	m        *Manager
	ws       []Workspace
	prefixes []string
}

func newResolveFixture(t testing.TB) *resolveFixture {
	t.Helper()
	m, p := setup(t)
	a, b := create(t, m, p, "alpha"), create(t, m, p, "feature/beta")
	base := realDir(t)
	outside := filepath.Join(base, "outside")
	sibling := a.Path + "-evil"
	for _, d := range []string{outside, sibling, filepath.Join(a.Path, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		filepath.Join(base, "link-in"):   a.Path,
		filepath.Join(base, "link-out"):  outside,
		filepath.Join(base, "link-loop"): filepath.Join(base, "link-loop"),
		filepath.Join(a.Path, "up"):      base,
		filepath.Join(a.Path, "to-b"):    b.Path,
	}
	for link, target := range links {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	return &resolveFixture{
		m:  m,
		ws: []Workspace{a, b},
		prefixes: []string{
			"", "/", base, p.Path, a.Path, b.Path, a.Path + "/", sibling, outside,
			filepath.Join(base, "link-in"), filepath.Join(base, "link-out"), filepath.Join(base, "link-loop"),
			filepath.Join(a.Path, "up"), filepath.Join(a.Path, "to-b"), filepath.Dir(a.Path),
		},
	}
}

// expectResolve is the oracle of Resolve: the request rules of docs/DESIGN.md,
// then "the path names the same folder as a registered workspace" as the
// kernel sees it (os.Stat follows symlinks; os.SameFile compares inodes),
// which shares no code with Resolve's string handling.
func (f *resolveFixture) expectResolve(path string) (Workspace, Code) {
	if path == "" || len(path) > MaxPathLength || strings.ContainsRune(path, 0) || !strings.HasPrefix(path, "/") {
		return Workspace{}, CodeInvalidInput
	}
	for _, part := range strings.Split(path, "/") {
		if part == ".." {
			return Workspace{}, CodeInvalidInput
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return Workspace{}, CodeWorkspaceNotFound
	}
	for _, ws := range f.ws {
		if wfi, err := os.Stat(ws.Path); err == nil && os.SameFile(fi, wfi) {
			return ws, ""
		}
	}
	return Workspace{}, CodeWorkspaceNotFound
}

func FuzzResolve(f *testing.F) {
	fx := newResolveFixture(f)
	for i := range fx.prefixes {
		for _, suffix := range []string{"", "/", "/.", "//", "/..", "/sub", "/sub/..", "-evil", "2", "/README.md", "/README.md/.", "/\x00", "/./", "/up/outside", "/to-b"} {
			f.Add(uint8(i), suffix)
		}
	}
	f.Add(uint8(0), "relative/path")
	f.Add(uint8(1), strings.Repeat("a/", MaxPathLength/2))
	f.Fuzz(func(t *testing.T, sel uint8, suffix string) {
		path := fx.prefixes[int(sel)%len(fx.prefixes)] + suffix
		got, err := fx.m.Resolve(path)
		want, code := fx.expectResolve(path)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Message == "" {
				t.Fatalf("Resolve(%q): error %v is not a workspace.Error with a message", path, err)
			}
			if e.Code != code {
				t.Fatalf("Resolve(%q) = %s (%v); want %s", path, e.Code, err, orOK(code))
			}
			return
		}
		// Success must be exactly one of the registered workspaces, and
		// the one the path names.
		if code != "" {
			t.Fatalf("Resolve(%q) = %+v; want %s", path, got, code)
		}
		if got != want {
			t.Fatalf("Resolve(%q) = %+v; want %+v", path, got, want)
		}
	})
}

func orOK(c Code) string {
	if c == "" {
		return "success"
	}
	return string(c)
}

// nameOK is the oracle of ValidateName, spelled out character by
// character from the documented rules.
func nameOK(name string) bool {
	if len(name) == 0 || len(name) > MaxNameLength || name == "HEAD" {
		return false
	}
	alnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }
	if !alnum(name[0]) {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !alnum(c) && c != '-' && c != '_' && c != '.' && c != '/' {
			return false
		}
		if i > 0 && (c == '.' || c == '/') && name[i-1] == c {
			return false // ".." or "//"
		}
	}
	if last := name[len(name)-1]; last == '/' || last == '.' {
		return false
	}
	for _, part := range strings.Split(name, "/") {
		if part[0] == '.' || strings.HasSuffix(part, ".lock") {
			return false
		}
	}
	return true
}

// inNameAlphabet reports whether name is made only of the characters
// ValidateName allows, so that git alone decides whether it is a branch
// name.
func inNameAlphabet(name string) bool {
	if name == "" || len(name) > MaxNameLength {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_./", c) >= 0) {
			return false
		}
	}
	return true
}

func FuzzValidateName(f *testing.F) {
	for _, s := range []string{
		"feature/login", "a", "A-1_b.c/d", "x.lock", "a..b", "a//b", "a/", "a.", "/a", "-a", ".a", "a/.b",
		"HEAD", "head", "a/HEAD", "a@{1}", "a b", "a~1", "a^", "a:b", "a?", "a*", "a[", "a\\b", "é",
		strings.Repeat("a", MaxNameLength), strings.Repeat("a", MaxNameLength+1), "a.lock/b", "a/b.lock.c", "refs/heads/x", "@",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := ValidateName(name)
		if want := nameOK(name); (err == nil) != want {
			t.Fatalf("ValidateName(%q) = %v; the documented rules say ok=%v", name, err, want)
		}
		if err != nil {
			if CodeOf(err) != CodeInvalidInput || err.Error() == "" {
				t.Fatalf("ValidateName(%q): error %v has code %s, want invalid-input", name, err, CodeOf(err))
			}
		}
		// Within the allowed characters git has the last word: every
		// accepted name is a branch name git accepts, and nothing git
		// refuses is accepted.
		if inNameAlphabet(name) {
			_, gerr := testenv.GitErr("", "check-ref-format", "--branch", name)
			if (err == nil) && gerr != nil {
				t.Fatalf("ValidateName accepts %q but git refuses it: %v", name, gerr)
			}
		}
	})
}

// designKeyRe is docs/DESIGN.md's rule for metadata keys, as written there.
var designKeyRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]*$`)

func keyOK(key string) bool {
	if len(key) == 0 || len(key) > MaxMetadataKeyLength {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if i == 0 && !letter || !letter && !(c >= '0' && c <= '9') && c != '-' {
			return false
		}
	}
	return true
}

// metadataFixture is one workspace to store metadata in.
type metadataFixture struct {
	m  *Manager
	ws Workspace
}

func newMetadataFixture(t testing.TB) *metadataFixture {
	t.Helper()
	m, p := setup(t)
	return &metadataFixture{m: m, ws: create(t, m, p, "meta")}
}

// roundTrip stores value under key through git and reads it back.
func (f *metadataFixture) roundTrip(t *testing.T, key, value string) {
	t.Helper()
	ctx := context.Background()
	if err := f.m.SetMetadata(ctx, f.ws.Path, key, &value); err != nil {
		t.Fatalf("SetMetadata(%q, %q) of a valid key and value: %v", key, value, err)
	}
	md, err := f.m.Metadata(ctx, f.ws.Path)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := md[strings.ToLower(key)]; !ok || got != value {
		t.Fatalf("metadata %q = %q (present %v) after setting %q", key, got, ok, value)
	}
	if err := f.m.SetMetadata(ctx, f.ws.Path, key, nil); err != nil {
		t.Fatalf("delete metadata %q: %v", key, err)
	}
}

func FuzzValidateMetadataKey(f *testing.F) {
	fx := newMetadataFixture(f)
	for _, s := range []string{
		"note", "ticket-id", "A", "a1", "1a", "-a", "a_b", "a.b", "a b", "", "é", "a\x00",
		strings.Repeat("k", MaxMetadataKeyLength), strings.Repeat("k", MaxMetadataKeyLength+1), "Base", "x-",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		err := ValidateMetadataKey(key)
		want := keyOK(key)
		if design := designKeyRe.MatchString(key) && len(key) <= MaxMetadataKeyLength; design != want {
			t.Fatalf("the test's oracle and docs/DESIGN.md's rule disagree on %q", key)
		}
		if (err == nil) != want {
			t.Fatalf("ValidateMetadataKey(%q) = %v; docs/DESIGN.md says ok=%v", key, err, want)
		}
		if err != nil {
			if CodeOf(err) != CodeInvalidInput {
				t.Fatalf("ValidateMetadataKey(%q): code %s, want invalid-input", key, CodeOf(err))
			}
			return
		}
		if !strings.EqualFold(key, "base") { // base must name a commit; see SetMetadata
			fx.roundTrip(t, key, "v")
		}
	})
}

func valueOK(v string) bool {
	return len(v) <= MaxMetadataValueLength && !strings.ContainsAny(v, "\n\r\x00") && utf8.ValidString(v)
}

func FuzzValidateMetadataValue(f *testing.F) {
	fx := newMetadataFixture(f)
	for _, s := range []string{
		"", "plain", " leading and trailing ", "\ttab", "# not a comment", "; nor this", `"quoted"`, `back\slash`,
		`\n literally`, "multi\nline", "cr\r", "nul\x00", "\xff\xfe", "ünïcödé ✓", "-starts-with-dash", "=",
		strings.Repeat("v", MaxMetadataValueLength), strings.Repeat("v", MaxMetadataValueLength+1), "[section]", "a = b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		err := ValidateMetadataValue(v)
		if want := valueOK(v); (err == nil) != want {
			t.Fatalf("ValidateMetadataValue(%q) = %v; the documented limits say ok=%v", v, err, want)
		}
		if err != nil {
			if CodeOf(err) != CodeInvalidInput {
				t.Fatalf("ValidateMetadataValue(%q): code %s, want invalid-input", v, CodeOf(err))
			}
			return
		}
		// Whatever is accepted survives git config unchanged.
		fx.roundTrip(t, "note", v)
	})
}
