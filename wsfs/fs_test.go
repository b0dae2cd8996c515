package wsfs

import (
	"bytes"
	"testing"
)

func TestDeniedMatchesEachPatternKindAtAnyDepth(t *testing.T) {
	deny := append(append([]string{}, DefaultDeny...), "secrets/", "config/prod/*.json")
	for _, c := range []struct {
		rel, want string
	}{
		{".git", ".git/"}, {".git/config", ".git/"}, {"vendor/x/.git/HEAD", ".git/"},
		{".env", ".env*"}, {"app/.env.local", ".env*"}, {".envrc", ".env*"}, {".env.d/x", ".env*"},
		{"tls/server.pem", "*.pem"}, {"a.key", "*.key"}, {"home/id_ed25519.pub", "id_*"},
		{"secrets", "secrets/"}, {"x/secrets/y", "secrets/"},
		{"config/prod/db.json", "config/prod/*.json"}, {"config/prod/db.json/inner", "config/prod/*.json"},
		{".", ""}, {"src/main.go", ""}, {"git/x", ""}, {"my.env", ""}, {"keys.txt", ""}, {"config/dev/db.json", ""},
		{"sub/config/prod/db.json", ""},
	} {
		if got := Denied(deny, c.rel); got != c.want {
			t.Errorf("Denied(%q) = %q, want %q", c.rel, got, c.want)
		}
	}
}

func TestUnderMatchesFromTheWorkspacesTopPartByPart(t *testing.T) {
	allow := []string{"src/", "docs/*.md", "cmd/*/main.go"}
	for _, c := range []struct {
		rel, want string
	}{
		{"src", "src/"}, {"src/a/b.go", "src/"}, {"docs/a.md", "docs/*.md"}, {"docs/a.md/x", "docs/*.md"},
		{"cmd/app/main.go", "cmd/*/main.go"},
		{".", ""}, {"srcx/a.go", ""}, {"x/src/a.go", ""}, {"docs", ""}, {"docs/a.txt", ""}, {"cmd/app/other.go", ""}, {"cmd/app", ""},
	} {
		if got := Under(allow, c.rel); got != c.want {
			t.Errorf("Under(%q) = %q, want %q", c.rel, got, c.want)
		}
	}
}

func TestCutToRuneKeepsWholeCharacters(t *testing.T) {
	euro := []byte("€") // 3 bytes
	for _, c := range []struct {
		in, want []byte
	}{
		{[]byte("ab"), []byte("ab")},
		{append([]byte("a"), euro[:1]...), []byte("a")},
		{append([]byte("a"), euro[:2]...), []byte("a")},
		{append([]byte("a"), euro...), append([]byte("a"), euro...)},
		{[]byte{}, []byte{}},
	} {
		if got := cutToRune(c.in); !bytes.Equal(got, c.want) {
			t.Errorf("cutToRune(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// On macOS and Windows ".ENV" opens .env: there the deny list folds case;
// on Linux .ENV is another file.
func TestDeniedFoldsCaseWhereTheFileSystemDoes(t *testing.T) {
	for _, rel := range []string{".ENV", ".GIT/config", "keys/Server.PEM", "ID_rsa"} {
		if got := denied(DefaultDeny, rel, true); got == "" {
			t.Errorf("folding case: %q is not denied", rel)
		}
		if got := denied(DefaultDeny, rel, false); got != "" {
			t.Errorf("keeping case: %q is denied by %q", rel, got)
		}
	}
}
