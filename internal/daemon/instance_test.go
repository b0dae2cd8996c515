package daemon

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"codehydra/internal/instance"
	"codehydra/internal/paths"
	"codehydra/internal/testenv"
	"codehydra/mcp"
)

func TestRotateTokenKeepsTheInstancesStartTime(t *testing.T) {
	testenv.Isolate(t)
	clock := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	tok, err := mcp.LoadOrCreateToken(filepath.Join(t.TempDir(), "token"))
	if err != nil {
		t.Fatal(err)
	}
	s := &server{
		opts:  Options{Stdout: io.Discard, Stderr: io.Discard, Getenv: os.Getenv, Now: func() time.Time { return clock }},
		pid:   os.Getpid(),
		log:   slog.New(slog.DiscardHandler),
		token: tok, mcpToken: tok.Value(), mcpURL: "http://127.0.0.1:4711/mcp", mcpPort: 4711,
	}
	if err := s.writeInstanceFile(t.Context()); err != nil {
		t.Fatal(err)
	}
	before, err := instance.Read(paths.InstanceFile())
	if err != nil {
		t.Fatal(err)
	}

	clock = clock.Add(90 * time.Minute)
	if err := s.rotateToken(); err != nil {
		t.Fatal(err)
	}
	after, err := instance.Read(paths.InstanceFile())
	if err != nil {
		t.Fatal(err)
	}
	if after.Token == before.Token {
		t.Fatal("the instance file still holds the old token")
	}
	if !after.StartedAt.Equal(before.StartedAt) {
		t.Fatalf("startedAt went from %v to %v on Rotate token; want it kept", before.StartedAt, after.StartedAt)
	}
}
