package mcp

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
)

var hexToken = regexp.MustCompile(`^[0-9a-f]{64}$`)

func TestLoadOrCreateTokenCreatesPrivateRandomTokenAndReadsItBack(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "codehydra")
	path := filepath.Join(dir, "token")

	first, err := LoadOrCreateToken(path)
	if err != nil {
		t.Fatal(err)
	}
	if !hexToken.MatchString(first.Value()) {
		t.Fatalf("token %q is not 32 bytes of hex", first.Value())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(data)) != first.Value() {
		t.Fatalf("file holds %q, token is %q", data, first.Value())
	}
	if runtime.GOOS != "windows" {
		assertMode(t, path, 0o600)
		assertMode(t, dir, 0o700)
	}

	again, err := LoadOrCreateToken(path)
	if err != nil {
		t.Fatal(err)
	}
	if again.Value() != first.Value() {
		t.Fatalf("second launch got %q, want the kept %q", again.Value(), first.Value())
	}

	other, err := LoadOrCreateToken(filepath.Join(t.TempDir(), "token"))
	if err != nil {
		t.Fatal(err)
	}
	if other.Value() == first.Value() {
		t.Fatal("two fresh tokens are equal")
	}
}

func TestLoadOrCreateTokenReplacesMalformedFileAndTightensModes(t *testing.T) {
	// Windows keeps no Unix modes to tighten: there the folder's ACL,
	// inherited from the user's profile, keeps the file private.
	modes := runtime.GOOS != "windows"
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "token")
	for _, content := range []string{"", "short", strings.Repeat("z", 64)} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		tok, err := LoadOrCreateToken(path)
		if err != nil {
			t.Fatal(err)
		}
		if !hexToken.MatchString(tok.Value()) {
			t.Fatalf("content %q: token %q", content, tok.Value())
		}
		if modes {
			assertMode(t, path, 0o600)
			assertMode(t, dir, 0o700)
		}
	}

	valid := strings.Repeat("ab", 32)
	if err := os.WriteFile(path, []byte(valid+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tok, err := LoadOrCreateToken(path)
	if err != nil {
		t.Fatal(err)
	}
	if tok.Value() != valid {
		t.Fatalf("got %q, want the file's %q", tok.Value(), valid)
	}
	if modes {
		assertMode(t, path, 0o600)
	}
}

func TestRotateWritesNewTokenAndOnlyItMatches(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token")
	tok, err := LoadOrCreateToken(path)
	if err != nil {
		t.Fatal(err)
	}
	old := tok.Value()
	if !tok.Matches(old) {
		t.Fatal("current token does not match")
	}
	if err := tok.Rotate(); err != nil {
		t.Fatal(err)
	}
	if tok.Value() == old {
		t.Fatal("Rotate kept the token")
	}
	if tok.Matches(old) {
		t.Fatal("old token still matches after Rotate")
	}
	if !tok.Matches(tok.Value()) {
		t.Fatal("new token does not match")
	}
	for _, bad := range []string{"", tok.Value()[:63], tok.Value() + "0", strings.ToUpper(tok.Value())} {
		if tok.Matches(bad) {
			t.Errorf("Matches(%q) = true", bad)
		}
	}
	reloaded, err := LoadOrCreateToken(path)
	if err != nil {
		t.Fatal(err)
	}
	if reloaded.Value() != tok.Value() {
		t.Fatal("the file does not hold the rotated token")
	}
}

func TestRotateFailureKeepsTokenAndFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token")
	tok, err := LoadOrCreateToken(path)
	if err != nil {
		t.Fatal(err)
	}
	old := tok.Value()
	tok.rand = bytes.NewReader(nil) // randomness runs dry
	if err := tok.Rotate(); err == nil {
		t.Fatal("Rotate without randomness succeeded")
	}
	if tok.Value() != old {
		t.Fatal("failed Rotate changed the token")
	}
	data, _ := os.ReadFile(path)
	if strings.TrimSpace(string(data)) != old {
		t.Fatal("failed Rotate changed the file")
	}
}

func TestTokenValueAndRotateAreSafeConcurrently(t *testing.T) {
	tok, err := LoadOrCreateToken(filepath.Join(t.TempDir(), "token"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for range 5 {
		wg.Go(func() {
			if err := tok.Rotate(); err != nil {
				errs <- err
			}
		})
		wg.Go(func() {
			for range 100 {
				if v := tok.Value(); !hexToken.MatchString(v) {
					errs <- errors.New("torn token " + v)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func assertMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s has mode %o, want %o", path, got, want)
	}
}
