package tasks

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"codehydra/internal/testenv"
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
set allow-duplicate-recipes
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
	testenv.Symlink(t, filepath.Join(outside, "Makefile"), filepath.Join(dir, "Makefile"))
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
		{"make:test", []string{"V=ok/path:1.2,x@y%z^w~v+u-t"}, []string{"make", "--", "test", "V=ok/path:1.2,x@y%z^w~v+u-t"}, false},
		{"make:test", []string{"V=a b;c"}, nil, true},
		{"make:test", []string{"V=$(shell id)"}, nil, true},
		{"make:test", []string{"V=`id`"}, nil, true},
		{"make:test", []string{"V=a\nb"}, nil, true},
		{"make:test", []string{"MAKEFLAGS=--eval=x"}, nil, true},
		{"make:test", []string{"MAKEFILES=x"}, nil, true},
		{"make:test", []string{"MAKEOVERRIDES=x"}, nil, true},
		{"make:test", []string{"MFLAGS=x"}, nil, true},
		{"make:test", []string{"GNUMAKEFLAGS=x"}, nil, true},
		{"make:test", []string{"SHELL=/bin/evil"}, nil, true},
		{"make:test", []string{".SHELLFLAGS=-c"}, nil, true},
		{"make:test", []string{"clean"}, nil, true},
		{"make:test", []string{"-f/etc/passwd"}, nil, true},
		{"just:two", []string{"a", "b"}, []string{"just", "--", "two", "a", "b"}, false},
		{"just:two", []string{"a", "b", "_secret"}, nil, true},
		{"just:any", []string{"a", "b", "c"}, []string{"just", "--", "any", "a", "b", "c"}, false},
		{"just:two", []string{"x;", "y"}, nil, true},
		{"just:two", []string{"$(x)"}, nil, true},
		{"npm:test", []string{"--ci"}, []string{"npm", "run", "test", "--", "--ci"}, false},
		{"npm:test", []string{"a;b"}, nil, true},
		{"npm:test", []string{"a\x00b"}, nil, true},
		{"sh:test", nil, nil, true},
	}
	params := map[string]int{"just:two": 2, "just:any": -1}
	for _, tc := range tests {
		got, err := Argv(dir, Task{Name: tc.task, maxArgs: params[tc.task]}, tc.args)
		if (err != nil) != tc.wantErr || !slices.Equal(got, tc.want) {
			t.Errorf("Argv(%s, %q) = %q, %v", tc.task, tc.args, got, err)
		}
	}
}

func TestAJustRecipesParametersBoundItsArguments(t *testing.T) {
	for line, want := range map[string]int{
		"build:":                                 0,
		"test target:":                           1,
		"deploy env region=\"eu west\": build":   2,
		"fmt $flag=(arch() + \"x\") path='a b':": 2,
		"run +args:":                             -1,
		"lint first *rest:":                      -1,
		"@quiet a b c:":                          3,
	} {
		if got := justParams(line); got != want {
			t.Errorf("justParams(%q) = %d, want %d", line, got, want)
		}
	}
}

func TestScriptsOfPnpmYarnAndBunTakeNoArguments(t *testing.T) {
	for lock, pm := range map[string]string{"pnpm-lock.yaml": "pnpm", "yarn.lock": "yarn", "bun.lockb": "bun"} {
		dir := t.TempDir()
		write(t, dir, lock, "")
		if _, err := Argv(dir, Task{Name: "npm:test"}, []string{"--filter"}); err == nil || !strings.Contains(err.Error(), pm) {
			t.Errorf("%s: Argv with an argument = %v, want a refusal naming %s", lock, err, pm)
		}
		if got, err := Argv(dir, Task{Name: "npm:test"}, nil); err != nil || !slices.Equal(got, []string{pm, "run", "test"}) {
			t.Errorf("%s: Argv without arguments = %q, %v", lock, got, err)
		}
	}
}

// TestARefusedArgumentCharacterIsNamed: an agent told only "bad
// arguments" cannot tell what to change; the error names the argument
// and the character, blanks and line breaks in words.
func TestARefusedArgumentCharacterIsNamed(t *testing.T) {
	for arg, want := range map[string]string{
		"V=$(id)":     `holds '$'`,
		"V=a;b":       `holds ';'`,
		"V=a b":       "holds a space",
		"V=a\nb":      `holds a line break ('\n')`,
		"V=a\r":       `holds a line break ('\r')`,
		"V=a\tb":      `holds a tab`,
		"V=`id`":      "holds '`'",
		"V=\"x\"":     `holds '"'`,
		"V=a\x1bb":    `holds '\x1b'`,
		"V=caf\u00e9": `holds 'é'`,
	} {
		_, err := Argv(t.TempDir(), Task{Name: "make:test"}, []string{"OK=1", arg})
		if !errors.Is(err, ErrBadArgs) || !strings.Contains(err.Error(), "args[1] "+want) {
			t.Errorf("Argv(%q) = %v, want an error saying args[1] %s", arg, err, want)
		}
	}
}

// TestAJustRecipeDefinedTwiceIsItsLastDefinitionOrRefused: with `set
// allow-duplicate-recipes` just runs a recipe's last definition, but the
// listing kept the first: its parameters (here *flags) then let an
// argument through that just took as another recipe to run, and a recipe
// made private by its last definition stayed listed. Without the setting
// just refuses the justfile, and so does the listing.
func TestAJustRecipeDefinedTwiceIsItsLastDefinitionOrRefused(t *testing.T) {
	body := `build *flags:
    echo first
[private]
hidden:
    echo private first
shown:
    echo public first
build:
    echo last
[private]
shown:
    echo private last
hidden:
    echo public last
`
	for _, setting := range []string{"set allow-duplicate-recipes\n", "set allow-duplicate-recipes := true\n"} {
		for _, file := range []string{setting + body, body + setting} {
			got, err := justTasks([]byte(file))
			if err != nil {
				t.Fatalf("%q: %v", file, err)
			}
			if want := []string{"just:build", "just:hidden"}; !slices.Equal(names(got), want) {
				t.Errorf("%q: recipes %v, want %v", file, names(got), want)
			}
			if _, err := Argv(t.TempDir(), got[0], []string{"_secret"}); !errors.Is(err, ErrBadArgs) {
				t.Errorf("%q: build, which takes no parameter in its last definition, took an argument: %v", file, err)
			}
		}
	}
	for _, file := range []string{body, "set allow-duplicate-recipes := false\n" + body} {
		got, err := justTasks([]byte(file))
		if err == nil || !strings.Contains(err.Error(), "build") || !strings.Contains(err.Error(), "allow-duplicate-recipes") {
			t.Errorf("%q: %v, %v; want the justfile refused, naming the recipe and the setting", file, names(got), err)
		}
	}
}
