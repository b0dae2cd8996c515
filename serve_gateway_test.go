package main

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"codehydra/internal/paths"
	"codehydra/internal/settings"
	"codehydra/internal/testenv"
)

// processesWith counts the live processes whose environment holds the
// line env ("NAME=value").
func processesWith(t *testing.T, env string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("needs /proc")
	}
	n := 0
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if bytes.Contains(stat, []byte(") Z ")) {
			continue
		}
		if slices.ContainsFunc(bytes.Split(data, []byte{0}), func(v []byte) bool { return string(v) == env }) {
			n++
		}
	}
	return n
}

func TestSavingMCPServersFromTheAppReconfiguresTheRunningGateway(t *testing.T) {
	isolate(t)
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
		cli: &cli{stdout: io.Discard, stderr: io.Discard, getenv: os.Getenv, now: time.Now},
		pid: os.Getpid(),
		log: slog.New(slog.DiscardHandler),
	}
	if err := s.loadSettings(); err != nil {
		t.Fatal(err)
	}
	if err := s.startGateway(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer s.shutdown()
	running := func(name string) bool {
		for _, st := range s.gateway.Statuses() {
			if st.Name == name {
				return st.State == "running"
			}
		}
		return false
	}
	testenv.WaitFor(t, "both servers to start at launch", 60*time.Second, func() bool {
		return running("keep") && running("gone") && processesWith(t, keepEnv) > 0 && processesWith(t, goneEnv) > 0
	})

	deps := s.appDeps()
	if deps.Gateway == nil {
		t.Fatal("the app is not given the gateway's statuses")
	}
	if err := deps.Settings.Update(func(st *settings.Settings) { delete(st.MCPServers, "gone") }); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "the removed server's process to end", 20*time.Second, func() bool {
		return processesWith(t, goneEnv) == 0
	})
	if names := deps.Gateway.Statuses(); len(names) != 1 || names[0].Name != "keep" || !running("keep") || processesWith(t, keepEnv) == 0 {
		t.Fatalf("after removing gone: statuses %+v, keep's processes %d; want keep alone, still running", names, processesWith(t, keepEnv))
	}

	// Shutdown stops the servers that are left.
	s.shutdown()
	if n := processesWith(t, keepEnv); n != 0 {
		t.Errorf("%d processes of keep are left after shutdown", n)
	}
}
