package settings

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"codehydra/internal/testenv"
)

func TestDefaultMatchesDocumentedValues(t *testing.T) {
	d := Default()
	want := Settings{
		Notifications:         true,
		Projects:              []string{},
		RateLimit:             RateLimit{PerSecond: 20, Burst: 40},
		ToolTimeoutSeconds:    30,
		MCPSessionIdleSeconds: 1800,
		MCPMaxSessions:        100,
		MCPMaxConnections:     256,
		TaskTimeoutSeconds:    600,

		LogMaxMB:             10,
		WorkspaceCreateLimit: CreateLimit{Count: 10, Minutes: 10, Descendants: 20},
		MaxAgents:            20,
		ProjectSetup:         map[string]ProjectSetup{},
		MCPServers:           map[string]MCPServer{},
		PinTools:             true,
		WorkspaceDeny:        []string{},
		Sandbox: Sandbox{Mode: "auto", Writable: []string{}, Readable: []string{}, Hidden: []string{
			"~/.ssh", "~/.gnupg", "~/.aws", "~/.azure", "~/.config/gcloud", "~/.config/gh", "~/.docker",
			"~/.kube", "~/.netrc", "~/.git-credentials", "~/.password-store", "~/.local/share/keyrings",
			"~/.pki", "~/.mozilla", "~/.config/google-chrome", "~/.config/chromium"}},
		PreventSleep: true,
		Escalation:   Escalation{Mode: "user", AfterSeconds: 120},
		Ports:        Ports{Range: "20000-29999", PerWorkspace: 10},
	}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("Default() = %+v, want %+v", d, want)
	}
	if err := d.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
}

func TestValidateRejectsOutOfRangeValues(t *testing.T) {
	tests := []struct {
		name    string
		change  func(*Settings)
		wantKey string // "" = valid
	}{
		{"defaults are valid", func(*Settings) {}, ""},
		{"fixed ports are valid", func(s *Settings) { s.MCPPort, s.OpencodeBasePort = 1, 65535 }, ""},
		{"absolute paths are valid", func(s *Settings) { s.WorktreeRoot, s.Projects = abs("/w"), []string{abs("/p")} }, ""},
		{"mcpPort negative", func(s *Settings) { s.MCPPort = -1 }, "mcpPort"},
		{"mcpPort too big", func(s *Settings) { s.MCPPort = 65536 }, "mcpPort"},
		{"opencodeBasePort too big", func(s *Settings) { s.OpencodeBasePort = 70000 }, "opencodeBasePort"},
		{"rate zero", func(s *Settings) { s.RateLimit.PerSecond = 0 }, "rateLimit.perSecond"},
		{"rate negative", func(s *Settings) { s.RateLimit.PerSecond = -3 }, "rateLimit.perSecond"},
		{"rate NaN", func(s *Settings) { s.RateLimit.PerSecond = math.NaN() }, "rateLimit.perSecond"},
		{"rate infinite", func(s *Settings) { s.RateLimit.PerSecond = math.Inf(1) }, "rateLimit.perSecond"},
		{"burst zero", func(s *Settings) { s.RateLimit.Burst = 0 }, "rateLimit.burst"},
		{"timeout zero", func(s *Settings) { s.ToolTimeoutSeconds = 0 }, "toolTimeoutSeconds"},
		{"timeout above 600", func(s *Settings) { s.ToolTimeoutSeconds = 601 }, "toolTimeoutSeconds"},
		{"session idle bounds are valid", func(s *Settings) { s.MCPSessionIdleSeconds, s.MCPMaxSessions = 1, 10000 }, ""},
		{"session idle zero", func(s *Settings) { s.MCPSessionIdleSeconds = 0 }, "mcpSessionIdleSeconds"},
		{"session idle above a week", func(s *Settings) { s.MCPSessionIdleSeconds = 604801 }, "mcpSessionIdleSeconds"},
		{"max sessions zero", func(s *Settings) { s.MCPMaxSessions = 0 }, "mcpMaxSessions"},
		{"max sessions above 10000", func(s *Settings) { s.MCPMaxSessions = 10001 }, "mcpMaxSessions"},
		{"max connections bounds are valid", func(s *Settings) { s.MCPMaxConnections = 16 }, ""},
		{"max connections top is valid", func(s *Settings) { s.MCPMaxConnections = 65535 }, ""},
		{"max connections below 16", func(s *Settings) { s.MCPMaxConnections = 15 }, "mcpMaxConnections"},
		{"max connections above 65535", func(s *Settings) { s.MCPMaxConnections = 65536 }, "mcpMaxConnections"},
		{"relative worktreeRoot", func(s *Settings) { s.WorktreeRoot = "trees" }, "worktreeRoot"},

		{"log limits at their bounds are valid", func(s *Settings) { s.LogMaxMB = 1024 }, ""},
		{"log limit zero", func(s *Settings) { s.LogMaxMB = 0 }, "logMaxMB"},
		{"log limit above 1024", func(s *Settings) { s.LogMaxMB = 1025 }, "logMaxMB"},
		{"create limit at its bounds is valid", func(s *Settings) { s.WorkspaceCreateLimit = CreateLimit{Count: 1000, Minutes: 1440, Descendants: 1000} }, ""},
		{"create limit at its low bounds is valid", func(s *Settings) { s.WorkspaceCreateLimit = CreateLimit{Count: 1, Minutes: 1, Descendants: 1} }, ""},
		{"descendants zero", func(s *Settings) { s.WorkspaceCreateLimit.Descendants = 0 }, "workspaceCreateLimit.descendants"},
		{"descendants above 1000", func(s *Settings) { s.WorkspaceCreateLimit.Descendants = 1001 }, "workspaceCreateLimit.descendants"},
		{"create count zero", func(s *Settings) { s.WorkspaceCreateLimit.Count = 0 }, "workspaceCreateLimit.count"},
		{"create count above 1000", func(s *Settings) { s.WorkspaceCreateLimit.Count = 1001 }, "workspaceCreateLimit.count"},
		{"create window zero", func(s *Settings) { s.WorkspaceCreateLimit.Minutes = 0 }, "workspaceCreateLimit.minutes"},
		{"create window above a day", func(s *Settings) { s.WorkspaceCreateLimit.Minutes = 1441 }, "workspaceCreateLimit.minutes"},
		{"agent caps at their bounds are valid", func(s *Settings) { s.MaxAgents = 1000 }, ""},
		{"maxAgents zero", func(s *Settings) { s.MaxAgents = 0 }, "maxAgents"},
		{"maxAgents above 1000", func(s *Settings) { s.MaxAgents = 1001 }, "maxAgents"},
		{"hibernateAfterMinutes at its bounds is valid", func(s *Settings) { s.HibernateAfterMinutes = 10080 }, ""},
		{"hibernateAfterMinutes negative", func(s *Settings) { s.HibernateAfterMinutes = -1 }, "hibernateAfterMinutes"},
		{"hibernateAfterMinutes above a week", func(s *Settings) { s.HibernateAfterMinutes = 10081 }, "hibernateAfterMinutes"},
		{"a port range of one block is valid", func(s *Settings) { s.Ports = Ports{Range: "1024-1033", PerWorkspace: 10} }, ""},
		{"a port range up to 65535 is valid", func(s *Settings) { s.Ports = Ports{Range: "65535-65535", PerWorkspace: 1} }, ""},
		{"port range not two numbers", func(s *Settings) { s.Ports.Range = "20000" }, "ports.range"},
		{"port range of words", func(s *Settings) { s.Ports.Range = "low-high" }, "ports.range"},
		{"port range below 1024", func(s *Settings) { s.Ports.Range = "1023-2000" }, "ports.range"},
		{"port range above 65535", func(s *Settings) { s.Ports.Range = "60000-65536" }, "ports.range"},
		{"port range upside down", func(s *Settings) { s.Ports.Range = "30000-20000" }, "ports.range"},
		{"ports per workspace zero", func(s *Settings) { s.Ports.PerWorkspace = 0 }, "ports.perWorkspace"},
		{"ports per workspace above 100", func(s *Settings) { s.Ports.PerWorkspace = 101 }, "ports.perWorkspace"},
		{"ports per workspace wider than the range", func(s *Settings) { s.Ports = Ports{Range: "20000-20004", PerWorkspace: 10} }, "ports.perWorkspace"},
		{"relative project", func(s *Settings) { s.Projects = []string{abs("/ok"), "repo"} }, "projects[1]"},
		{"empty project", func(s *Settings) { s.Projects = []string{""} }, "projects[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Default()
			tt.change(&s)
			err := s.Validate()
			if tt.wantKey == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantKey+" ") {
				t.Fatalf("Validate() = %v, want an error about %s", err, tt.wantKey)
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	s := Default()
	s.MCPPort = -1
	s.ToolTimeoutSeconds = 0
	err := s.Validate()
	if err == nil || !strings.Contains(err.Error(), "mcpPort") || !strings.Contains(err.Error(), "toolTimeoutSeconds") {
		t.Fatalf("Validate() = %v, want both problems", err)
	}
}

func TestLoadReadsValidFiles(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    func() Settings
	}{
		{"empty object gives defaults", `{}`, Default},
		{"null gives defaults", `null`, Default},
		{"missing keys keep defaults", `{"mcpPort": 7000, "rateLimit": {"burst": 5}}`, func() Settings {
			s := Default()
			s.MCPPort = 7000
			s.RateLimit.Burst = 5
			return s
		}},
		{"notifications can be turned off", `{"notifications": false}`, func() Settings {
			s := Default()
			s.Notifications = false
			return s
		}},
		{"tool pinning can be turned off", `{"pinTools": false}`, func() Settings {
			s := Default()
			s.PinTools = false
			return s
		}},
		{"keeping the system awake can be turned off", `{"preventSleep": false}`, func() Settings {
			s := Default()
			s.PreventSleep = false
			return s
		}},
		{"every key", absJSON(`{"mcpPort":1,"opencodeBasePort":2,"opencodeBin":"/bin/oc","worktreeRoot":"/w","notifications":true,
			"projects":["/a","/b"],"rateLimit":{"perSecond":1.5,"burst":3},"toolTimeoutSeconds":600,
			"mcpSessionIdleSeconds":2,"mcpMaxSessions":7,"mcpMaxConnections":99,"taskTimeoutSeconds":5,
			"logMaxMB":1,"workspaceCreateLimit":{"count":3,"minutes":60},"maxAgents":4,
			"projectSetup":{"/a":{"copy":[".env*"],"setup":"make","setupTimeoutSeconds":9}},
			"mcpServers":{"fs":{"command":"npx","args":["-y","x"],"env":{"T":"{env:T}"},"scope":"workspace","confine":true,"startAtLaunch":true},
				"gh":{"url":"https://example.com/mcp","headers":{"Authorization":"Bearer {env:GH}"}}},"pinTools":true,"workspaceDeny":["vault/"],
			"sandbox":{"mode":"required","writable":["~/.m2"],"readable":["/opt/sdk"],"hidden":[],"unixSockets":true},"preventSleep":false,
			"escalation":{"mode":"parent-first","afterSeconds":30},"ports":{"range":"40000-40999","perWorkspace":5}}`), func() Settings {
			return Settings{MCPPort: 1, OpencodeBasePort: 2, OpencodeBin: abs("/bin/oc"), WorktreeRoot: abs("/w"), Notifications: true,
				Projects: []string{abs("/a"), abs("/b")}, RateLimit: RateLimit{PerSecond: 1.5, Burst: 3}, ToolTimeoutSeconds: 600,
				MCPSessionIdleSeconds: 2, MCPMaxSessions: 7, MCPMaxConnections: 99, TaskTimeoutSeconds: 5,
				LogMaxMB: 1, WorkspaceCreateLimit: CreateLimit{Count: 3, Minutes: 60, Descendants: 20}, MaxAgents: 4,
				ProjectSetup: map[string]ProjectSetup{abs("/a"): {Copy: []string{".env*"}, Setup: "make", SetupTimeoutSeconds: 9}},
				MCPServers: map[string]MCPServer{
					"fs": {Command: "npx", Args: []string{"-y", "x"}, Env: map[string]string{"T": "{env:T}"}, Scope: ScopeWorkspace, Confine: true, StartAtLaunch: true},
					"gh": {URL: "https://example.com/mcp", Headers: map[string]string{"Authorization": "Bearer {env:GH}"}}},
				PinTools: true, WorkspaceDeny: []string{"vault/"},
				Sandbox: Sandbox{Mode: "required", Writable: []string{"~/.m2"}, Readable: []string{abs("/opt/sdk")}, Hidden: []string{},
					UnixSockets: true},
				Escalation: Escalation{Mode: EscalateParentFirst, AfterSeconds: 30},
				Ports:      Ports{Range: "40000-40999", PerWorkspace: 5}}
		}},
		{"the escalation mode alone keeps its delay", `{"escalation": {"mode": "parent-first"}}`, func() Settings {
			s := Default()
			s.Escalation.Mode = EscalateParentFirst
			return s
		}},
		{"the sandbox mode alone", `{"sandbox": "off"}`, func() Settings {
			s := Default()
			s.Sandbox.Mode = "off"
			return s
		}},
		{"sandbox lists not named keep their defaults", absJSON(`{"sandbox": {"mode": "auto", "writable": ["/srv/cache"]}}`), func() Settings {
			s := Default()
			s.Sandbox.Writable = []string{abs("/srv/cache")}
			return s
		}},
		{"unix sockets alone keep the mode and the lists", `{"sandbox": {"unixSockets": true}}`, func() Settings {
			s := Default()
			s.Sandbox.UnixSockets = true
			return s
		}},
		{"null projects become empty", `{"projects": null}`, Default},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "settings.json")
			testenv.WriteFile(t, path, tt.content)
			got, err := Load(path)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if want := tt.want(); !reflect.DeepEqual(got, want) {
				t.Fatalf("Load = %+v, want %+v", got, want)
			}
		})
	}
}

func TestLoadMissingFileGivesDefaultsAndWritesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "codehydra", "settings.json")
	got, err := Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if !reflect.DeepEqual(got, Default()) {
		t.Fatalf("Load = %+v, want defaults", got)
	}
	if _, err := os.Stat(filepath.Dir(path)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Load created %s (stat err %v)", filepath.Dir(path), err)
	}
}

func TestLoadMovesCorruptFileAside(t *testing.T) {
	tests := []struct {
		name    string
		content string
		inError string
	}{
		{"bad JSON", `{"mcpPort": `, "bad JSON"},
		{"empty file", ``, "bad JSON"},
		{"wrong type", `{"mcpPort": "seven"}`, "bad JSON"},
		{"unix sockets not a boolean", `{"sandbox": {"unixSockets": "yes"}}`, "bad JSON"},
		{"top-level array", `[1]`, "bad JSON"},
		{"invalid value", `{"toolTimeoutSeconds": 9999}`, "toolTimeoutSeconds"},
		{"relative project", `{"projects": ["here"]}`, "projects[0]"},
		{"unknown escalation", `{"escalation": {"mode": "parent"}}`, "escalation.mode"},
		{"escalation too quick", `{"escalation": {"mode": "parent-first", "afterSeconds": 1}}`, "escalation.afterSeconds"},
	}
	now := time.Date(2006, 11, 2, 15, 4, 5, 0, time.UTC)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "settings.json")
			testenv.WriteFile(t, path, tt.content)
			got, err := load(path, func() time.Time { return now })
			var cerr *CorruptError
			if !errors.As(err, &cerr) {
				t.Fatalf("Load error = %v, want *CorruptError", err)
			}
			if !reflect.DeepEqual(got, Default()) {
				t.Fatalf("Load = %+v, want defaults", got)
			}
			wantMoved := path + ".bad-20061102-150405"
			if cerr.MovedTo != wantMoved || cerr.Path != path {
				t.Fatalf("CorruptError = %+v, want moved to %s", cerr, wantMoved)
			}
			if !strings.Contains(err.Error(), tt.inError) || !strings.Contains(err.Error(), wantMoved) {
				t.Fatalf("error %q should mention %q and %s", err, tt.inError, wantMoved)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("corrupt file still at %s", path)
			}
			kept, err := os.ReadFile(wantMoved)
			if err != nil || string(kept) != tt.content {
				t.Fatalf("moved file = %q, %v; want the original content %q", kept, err, tt.content)
			}
		})
	}
}

func TestLoadNeverReplacesAnEarlierBadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "settings.json")
	now := func() time.Time { return time.Date(2006, 11, 2, 15, 4, 5, 0, time.UTC) }
	for i, content := range []string{"first{", "second{", "third{"} {
		testenv.WriteFile(t, path, content)
		_, err := load(path, now)
		var cerr *CorruptError
		if !errors.As(err, &cerr) {
			t.Fatalf("load %d: %v", i, err)
		}
	}
	for name, want := range map[string]string{
		"settings.json.bad-20061102-150405":   "first{",
		"settings.json.bad-20061102-150405-1": "second{",
		"settings.json.bad-20061102-150405-2": "third{",
	} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}
}

func TestSaveWritesPrivateFileThatLoadsBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "settings.json")
	s := Default()
	s.MCPPort = 4242
	s.Projects = []string{abs("/src/a")}
	if err := Save(path, s); err != nil {
		t.Fatalf("Save: %v", err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	// Windows keeps no Unix modes: the folder's inherited ACL guards it.
	if perm := info.Mode().Perm(); runtime.GOOS != "windows" && perm != 0o600 {
		t.Fatalf("mode = %o, want 600", perm)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if !reflect.DeepEqual(got, s) {
		t.Fatalf("round trip = %+v, want %+v", got, s)
	}
}

func TestSaveRefusesInvalidSettingsAndKeepsTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	testenv.WriteFile(t, path, `{"mcpPort": 1}`)
	s := Default()
	s.RateLimit.Burst = 0
	if err := Save(path, s); err == nil {
		t.Fatal("Save of invalid settings succeeded")
	}
	if got, _ := os.ReadFile(path); string(got) != `{"mcpPort": 1}` {
		t.Fatalf("file changed to %q", got)
	}
}

func TestSaveKeepsUnknownKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	testenv.WriteFile(t, path, `{"mcpPort": 5, "future": {"nested": [1, 2]}, "theme": "dark", "MCPPORT": 9}`)
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.MCPPort != 9 {
		t.Fatalf("MCPPort = %d; encoding/json takes the last case-insensitive match, 9", s.MCPPort)
	}
	s.Notifications = false
	if err := Save(path, s); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatalf("saved file is not JSON: %v\n%s", err, data)
	}
	if string(raw["theme"]) != `"dark"` {
		t.Errorf("theme = %s, want \"dark\"", raw["theme"])
	}
	var future struct{ Nested []int }
	if err := json.Unmarshal(raw["future"], &future); err != nil || !reflect.DeepEqual(future.Nested, []int{1, 2}) {
		t.Errorf("future = %s, want {\"nested\":[1,2]}", raw["future"])
	}
	if _, dup := raw["MCPPORT"]; dup {
		t.Errorf("a second spelling of mcpPort was written back:\n%s", data)
	}
	if string(raw["mcpPort"]) != "9" || string(raw["notifications"]) != "false" {
		t.Errorf("known keys not saved:\n%s", data)
	}
	again, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, s) {
		t.Fatalf("second load = %+v, want %+v", again, s)
	}
}

func TestSaveWritesEveryKnownKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	if err := Save(path, Default()); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"mcpPort", "opencodeBasePort", "opencodeBin", "worktreeRoot", "notifications", "projects", "rateLimit", "toolTimeoutSeconds",
		"mcpSessionIdleSeconds", "mcpMaxSessions", "mcpMaxConnections", "taskTimeoutSeconds", "logMaxMB", "workspaceCreateLimit", "maxAgents",
		"editorCommand", "terminalCommand", "prCommand", "projectSetup", "mcpServers", "pinTools", "workspaceDeny", "sandbox", "preventSleep", "escalation", "hibernateAfterMinutes", "ports"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("key %s missing from\n%s", k, data)
		}
	}
	if string(raw["projects"]) != "[]" {
		t.Errorf("projects = %s, want []", raw["projects"])
	}
}

func TestStoreUpdateSavesAndGetReturnsCopies(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	testenv.WriteFile(t, path, `{"keep": true}`)
	st := NewStore(path)
	if err := st.Load(); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveProjects([]string{abs("/p1"), abs("/p2")}); err != nil {
		t.Fatalf("SaveProjects: %v", err)
	}
	got := st.Get()
	got.Projects[0] = "/changed"
	if st.Get().Projects[0] != abs("/p1") {
		t.Fatal("Get returned settings sharing memory with the store")
	}
	onDisk, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(onDisk.Projects, []string{abs("/p1"), abs("/p2")}) {
		t.Fatalf("saved projects = %v", onDisk.Projects)
	}
	if data, _ := os.ReadFile(path); !strings.Contains(string(data), `"keep": true`) {
		t.Fatalf("unknown key lost:\n%s", data)
	}
}

func TestStoreUpdateWithInvalidValueChangesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	st := NewStore(path)
	err := st.Update(func(s *Settings) { s.MCPPort = 1; s.ToolTimeoutSeconds = 0 })
	if err == nil {
		t.Fatal("Update with an invalid timeout succeeded")
	}
	if st.Get().MCPPort != 0 {
		t.Fatal("failed Update changed the current settings")
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("failed Update wrote the file")
	}
}

func TestStoreLoadOfCorruptFileHoldsDefaults(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	testenv.WriteFile(t, path, `{"mcpPort": 99999}`)
	st := NewStore(path)
	var cerr *CorruptError
	if err := st.Load(); !errors.As(err, &cerr) {
		t.Fatalf("Load = %v, want *CorruptError", err)
	}
	if !reflect.DeepEqual(st.Get(), Default()) {
		t.Fatalf("store holds %+v, want defaults", st.Get())
	}
}

func TestStoreConcurrentUpdatesAllLand(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	st := NewStore(path)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if err := st.Update(func(s *Settings) { s.MCPPort++ }); err != nil {
				t.Error(err)
			}
			_ = st.Get()
		})
	}
	wg.Wait()
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.MCPPort != 20 || st.Get().MCPPort != 20 {
		t.Fatalf("MCPPort on disk %d, in store %d; want 20", got.MCPPort, st.Get().MCPPort)
	}
}

func TestKnownKeysMatchStructTags(t *testing.T) {
	want := []string{"mcpPort", "opencodeBasePort", "opencodeBin", "worktreeRoot", "notifications", "projects", "rateLimit", "toolTimeoutSeconds",
		"mcpSessionIdleSeconds", "mcpMaxSessions", "mcpMaxConnections", "taskTimeoutSeconds", "logMaxMB", "workspaceCreateLimit", "maxAgents",
		"editorCommand", "terminalCommand", "prCommand", "projectSetup", "mcpServers", "pinTools", "workspaceDeny", "sandbox", "preventSleep", "escalation", "hibernateAfterMinutes", "ports"}
	if got := knownKeys(); !reflect.DeepEqual(got, want) {
		t.Fatalf("knownKeys() = %v, want %v", got, want)
	}
}

func TestOpencodeBinMustNotBeARelativePath(t *testing.T) {
	for _, tc := range []struct {
		bin string
		ok  bool
	}{
		{"", true},
		{"opencode", true}, // looked up on PATH only
		{abs("/usr/local/bin/opencode"), true},
		{"./opencode", false},
		{"node_modules/.bin/opencode", false},
		{"../tools/opencode", false},
		{`bin\opencode`, false},
	} {
		s := Default()
		s.OpencodeBin = tc.bin
		err := s.Validate()
		if tc.ok && err != nil {
			t.Errorf("opencodeBin %q refused: %v", tc.bin, err)
		}
		if !tc.ok && (err == nil || !strings.Contains(err.Error(), "relative path")) {
			t.Errorf("opencodeBin %q: Validate() = %v, want a relative-path error", tc.bin, err)
		}
	}
}
