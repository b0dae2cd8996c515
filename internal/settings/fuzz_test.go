package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"
)

// FuzzLoad feeds arbitrary bytes to Load as a settings file. Whatever they
// are, Load must not panic and must end in one of two states:
//   - valid settings, the file byte for byte as it was and nothing else
//     written; saving them gives a file that loads back to the same
//     settings and saves to the same bytes;
//   - a *CorruptError with the defaults, the file moved aside with its
//     content intact, nothing left at the settings path, and an earlier
//     bad file of the same second not overwritten;
//   - a *DroppedKeyError (a relative opencodeBin) with valid settings
//     without it, the file as it was copied aside (the earlier bad file
//     untouched) and the settings path holding a file that loads back to
//     the same settings without an error.
func FuzzLoad(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `null`, `[]`, `"x"`, `0`, `{"mcpPort":`, `{"mcpPort":65535}`, `{"mcpPort":65536}`, `{"mcpPort":-1}`,
		`{"mcpPort":1e3}`, `{"mcpPort":1.5}`, `{"MCPPORT":7,"mcpPort":8}`, `{"projects":null}`, `{"projects":["/a","/a"]}`,
		`{"projects":["rel"]}`, `{"worktreeRoot":"/w\u0000x"}`, `{"rateLimit":{"perSecond":0}}`, `{"rateLimit":{"perSecond":1e308,"burst":1}}`,
		`{"rateLimit":null}`, `{"toolTimeoutSeconds":600}`, `{"unknown":{"deep":[1,2,{"x":"<&>"}]},"zz":null}`, `{"a":1,"a":2}`,
		`{"notifications":false,"opencodeBin":"/usr/bin/opencode"}`, "{\"k\":\"\xff\"}", "\xef\xbb\xbf{}", `{} trailing`, `{"":1}`,
		`{"opencodeBin":"./oc","mcpPort":7}`, `{"opencodeBin":"a/b","mcpPort":70000}`, `{"opencodeBin":"a\\b","x":[]}`,
	} {
		f.Add([]byte(s))
	}
	now := time.Date(2006, 11, 2, 15, 4, 5, 0, time.UTC)
	clock := func() time.Time { return now }
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "settings.json")
		earlier := path + ".bad-" + now.Format("20060102-150405")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(earlier, []byte("an earlier bad file"), 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := load(path, clock)

		if b, rerr := os.ReadFile(earlier); rerr != nil || string(b) != "an earlier bad file" {
			t.Fatalf("the earlier bad file was overwritten: %q, %v", b, rerr)
		}
		var derr *DroppedKeyError
		if errors.As(err, &derr) {
			checkDropped(t, data, s, derr, earlier)
			return
		}
		if err != nil {
			var cerr *CorruptError
			if !errors.As(err, &cerr) {
				t.Fatalf("Load(%q) = %v; want valid settings or a *CorruptError", data, err)
			}
			if !reflect.DeepEqual(s, Default()) {
				t.Fatalf("Load(%q) with an error returned %+v, not the defaults", data, s)
			}
			if cerr.MovedTo == "" || cerr.MovedTo == earlier || filepath.Dir(cerr.MovedTo) != dir {
				t.Fatalf("corrupt file moved to %q", cerr.MovedTo)
			}
			if b, rerr := os.ReadFile(cerr.MovedTo); rerr != nil || !bytes.Equal(b, data) {
				t.Fatalf("moved file holds %q, %v; want the original %q", b, rerr, data)
			}
			if _, serr := os.Lstat(path); !errors.Is(serr, os.ErrNotExist) {
				t.Fatalf("something is left at the settings path after moving it aside: %v", serr)
			}
			return
		}
		if verr := s.Validate(); verr != nil {
			t.Fatalf("Load(%q) returned settings that do not validate: %v", data, verr)
		}
		if b, rerr := os.ReadFile(path); rerr != nil || !bytes.Equal(b, data) {
			t.Fatalf("Load changed the settings file: %q, %v", b, rerr)
		}
		if names := dirNames(t, dir); !slices.Equal(names, []string{"settings.json", filepath.Base(earlier)}) {
			t.Fatalf("Load wrote files: %v", names)
		}

		// A save is a fixed point after one normalisation: what it writes
		// loads back to the same settings and saves to the same bytes.
		saved := filepath.Join(dir, "saved.json")
		if err := Save(saved, s); err != nil {
			t.Fatalf("Save of loaded settings: %v", err)
		}
		first, _ := os.ReadFile(saved)
		s2, err := Load(saved)
		if err != nil {
			t.Fatalf("Load of saved settings %s: %v", first, err)
		}
		if !reflect.DeepEqual(fieldsOf(s), fieldsOf(s2)) {
			t.Fatalf("settings changed through a save: %+v became %+v", fieldsOf(s), fieldsOf(s2))
		}
		if !sameJSON(t, extraJSON(t, s), extraJSON(t, s2)) {
			t.Fatalf("unknown keys changed through a save: %s became %s", extraJSON(t, s), extraJSON(t, s2))
		}
		if err := Save(saved, s2); err != nil {
			t.Fatal(err)
		}
		if second, _ := os.ReadFile(saved); !bytes.Equal(first, second) {
			t.Fatalf("saving twice gives different files:\n%s\n%s", first, second)
		}
	})
}

// checkDropped checks Load's third outcome: a relative opencodeBin dropped.
func checkDropped(t *testing.T, data []byte, s Settings, derr *DroppedKeyError, earlier string) {
	t.Helper()
	if verr := s.Validate(); verr != nil || s.OpencodeBin != "" {
		t.Fatalf("Load(%q) dropped a key but returned %+v (%v)", data, s, verr)
	}
	if derr.WriteErr != nil || derr.Backup == "" || derr.Backup == earlier {
		t.Fatalf("Load(%q): backup %q, write error %v", data, derr.Backup, derr.WriteErr)
	}
	if b, rerr := os.ReadFile(derr.Backup); rerr != nil || !bytes.Equal(b, data) {
		t.Fatalf("backup holds %q, %v; want the original %q", b, rerr, data)
	}
	again, err := Load(derr.Path)
	if err != nil {
		t.Fatalf("Load of the rewritten file: %v", err)
	}
	if !reflect.DeepEqual(fieldsOf(s), fieldsOf(again)) {
		t.Fatalf("the rewritten file loads as %+v, want %+v", fieldsOf(again), fieldsOf(s))
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// fieldsOf is s without its unknown keys.
func fieldsOf(s Settings) settingsFields {
	f := settingsFields(s)
	f.extra = nil
	return f
}

func extraJSON(t *testing.T, s Settings) []byte {
	t.Helper()
	b, err := json.Marshal(s.extra)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}
