package tasks

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

func names(ts []Task) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestJustfileParserListsPublicRecipesOnly(t *testing.T) {
	got, err := justTasks([]byte(`# comment
set shell := ["bash", "-c"]
alias b := build
version := "1.0"
export FOO := 'x:y'
text := '''
notarecipe: here
'''

default: build
build target='debug' *flags:
    cargo build
@test:
	cargo test
_helper:
    echo hidden
[private]
secret:
    echo hidden
[group('ci')]
lint url="http://x":  build
    echo {{url}}
build:
    echo duplicate
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"just:default", "just:build", "just:test", "just:lint"}
	if !slices.Equal(names(got), want) {
		t.Fatalf("recipes %v, want %v", names(got), want)
	}
	if got[1].Command != "just -- build" {
		t.Errorf("command %q", got[1].Command)
	}
}

func TestMakefileParserSkipsSpecialPatternAndVariableTargets(t *testing.T) {
	got, err := makeTasks([]byte(`CC := gcc
FLAGS ?= -O2
X = a:b
.PHONY: all test
.DEFAULT_GOAL := all
all: build test
build test:: main.o
	$(CC) -o main main.o
%.o: %.c
	$(CC) -c $<
$(OUT): x
debug: CFLAGS += -g
lib/x.a: ; ar rcs $@
define RECIPE
fake: target
endef
long: a \
  b: c
	echo done
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"make:all", "make:build", "make:test", "make:lib/x.a", "make:long"}
	if !slices.Equal(names(got), want) {
		t.Fatalf("targets %v, want %v", names(got), want)
	}
}

func TestFindNamesTasksBySourceAndPicksTheLockfilesManager(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "Makefile", "test:\n\techo make\n")
	write(t, dir, "justfile", "test:\n    echo just\n")
	write(t, dir, "package.json", `{"scripts":{"test":"jest --ci","build":"tsc","bad":1}}`)
	write(t, dir, "pnpm-lock.yaml", "")
	got, err := Find(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []Task{
		{Name: "just:test", Source: SourceJustfile, Command: "just -- test"},
		{Name: "make:test", Source: SourceMakefile, Command: "make -- test"},
		{Name: "npm:build", Source: SourcePackageJSON, Command: "pnpm run build (tsc)"},
		{Name: "npm:test", Source: SourcePackageJSON, Command: "pnpm run test (jest --ci)"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("tasks\n%v, want\n%v", got, want)
	}
}

func TestFindReportsABrokenFileAndKeepsTheOthers(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "Makefile", "build:\n\ttrue\n")
	write(t, dir, "package.json", `{"scripts":`)
	got, err := Find(dir)
	if err == nil {
		t.Fatal("a broken package.json is no error")
	}
	if !slices.Equal(names(got), []string{"make:build"}) {
		t.Fatalf("tasks %v", names(got))
	}
}

func TestFindDoesNotFollowATaskFileOutOfTheFolder(t *testing.T) {
	outside := t.TempDir()
	write(t, outside, "Makefile", "steal:\n\ttrue\n")
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(outside, "Makefile"), filepath.Join(dir, "Makefile")); err != nil {
		t.Fatal(err)
	}
	got, err := Find(dir)
	if err == nil || len(got) != 0 {
		t.Fatalf("a Makefile linking out was read: %v, %v", got, err)
	}
}

func TestArgvAppendsArgsAsSeparateWords(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		task    string
		args    []string
		want    []string
		wantErr bool
	}{
		{"make:test", []string{"V=a b;c"}, []string{"make", "--", "test", "V=a b;c"}, false},
		{"make:test", []string{"clean"}, nil, true},
		{"make:test", []string{"-f/etc/passwd"}, nil, true},
		{"just:test", []string{"--help", "$(x)"}, []string{"just", "--", "test", "--help", "$(x)"}, false},
		{"npm:test", []string{"a;b"}, []string{"npm", "run", "test", "--", "a;b"}, false},
		{"npm:test", []string{"a\x00b"}, nil, true},
		{"sh:test", nil, nil, true},
	}
	for _, tc := range tests {
		got, err := Argv(dir, Task{Name: tc.task}, tc.args)
		if (err != nil) != tc.wantErr || !slices.Equal(got, tc.want) {
			t.Errorf("Argv(%s, %q) = %q, %v", tc.task, tc.args, got, err)
		}
	}
}

// A FIFO named Makefile must not hang the listing: opening it for
// reading would wait for a writer forever.
func TestFindDoesNotHangOnAFIFONamedMakefile(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "Makefile"), 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := Find(dir); done <- err }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Find hangs on a FIFO named Makefile")
	}
}
