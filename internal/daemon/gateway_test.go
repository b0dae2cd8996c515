package daemon

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"codehydra/internal/paths"
	"codehydra/internal/settings"
	"codehydra/internal/testenv"
)

func TestSavingMCPServersFromTheAppReconfiguresTheRunningGateway(t *testing.T) {
	testenv.Isolate(t)
	every := testenv.RealMCPServer(t, "mcp-server-everything")
	// Each server's processes carry a value of their own in their
	// environment, to be found in /proc.
	mark := filepath.Base(t.TempDir())
	keepEnv, goneEnv := "GWUI_TEST_SERVER="+mark+"-keep", "GWUI_TEST_SERVER="+mark+"-gone"
	cfg := func(env string) settings.MCPServer {
		_, v, _ := strings.Cut(env, "=")
		return settings.MCPServer{Command: every, Env: map[string]string{"GWUI_TEST_SERVER": v}, StartAtLaunch: true}
	}
	if err := settings.Save(paths.SettingsFile(), func() settings.Settings {
		s := settings.Default()
		s.MCPServers = map[string]settings.MCPServer{"keep": cfg(keepEnv), "gone": cfg(goneEnv)}
		return s
	}()); err != nil {
		t.Fatal(err)
	}
	s := &server{
		opts: Options{Stdout: io.Discard, Stderr: io.Discard, Getenv: os.Getenv, Now: time.Now},
		pid:  os.Getpid(),
		log:  slog.New(slog.DiscardHandler),
	}
	if err := s.loadSettings(); err != nil {
		t.Fatal(err)
	}
	defer s.shutdown()
	if err := s.build(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := s.startGateway(t.Context()); err != nil {
		t.Fatal(err)
	}
	running := func(name string) bool {
		for _, st := range s.gateway.Statuses() {
			if st.Name == name {
				return st.State == "running"
			}
		}
		return false
	}
	testenv.WaitFor(t, "both servers to start at launch", 60*time.Second, func() bool {
		return running("keep") && running("gone") && testenv.ProcessesWith(t, keepEnv) > 0 && testenv.ProcessesWith(t, goneEnv) > 0
	})

	parts := s.uiParts()
	if parts.Gateway == nil {
		t.Fatal("the app is not given the gateway")
	}
	if err := parts.Settings.Update(func(st *settings.Settings) { delete(st.MCPServers, "gone") }); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "the removed server's process to end", 20*time.Second, func() bool {
		return testenv.ProcessesWith(t, goneEnv) == 0
	})
	if names := parts.Gateway.Statuses(); len(names) != 1 || names[0].Name != "keep" || !running("keep") || testenv.ProcessesWith(t, keepEnv) == 0 {
		t.Fatalf("after removing gone: statuses %+v, keep's processes %d; want keep alone, still running", names, testenv.ProcessesWith(t, keepEnv))
	}

	// Shutdown stops the servers that are left.
	s.shutdown()
	if n := testenv.ProcessesWith(t, keepEnv); n != 0 {
		t.Errorf("%d processes of keep are left after shutdown", n)
	}
}
