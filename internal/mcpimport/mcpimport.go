// Package mcpimport finds the MCP servers the user configured in other
// clients (Claude Desktop, Claude Code, opencode and VS Code) and turns
// the ones the user picks into CodeHydra's settings.MCPServer: each
// client's own references to the environment become {env:NAME}, what
// cannot be carried over is said, and values written out in those files
// (tokens, as often as not) are not copied unless the user asks.
package mcpimport

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"

	"codehydra/internal/settings"
)

// The clients whose configurations are read (Found.Client).
const (
	ClaudeDesktop = "Claude Desktop"
	ClaudeCode    = "Claude Code"
	Opencode      = "opencode"
	VSCode        = "VS Code"
)

// Found is one server in another client's configuration, in CodeHydra's
// shape: references to the environment are {env:NAME}, literal values are
// as written (Plan decides whether they are copied).
type Found struct {
	// Client is who the file belongs to (ClaudeDesktop…).
	Client string
	// Source is the file it was read from; Where, when not "", the part of
	// it ("project /home/me/app" in ~/.claude.json).
	Source string
	Where  string
	// Name is the server's name in that file.
	Name   string
	Server settings.MCPServer
	// Needs are the values the file took from somewhere CodeHydra cannot
	// (a VS Code input, an opencode {file:}): each is {env:Var} in Server,
	// and the user has to set Var.
	Needs []Need
	// Notes say what was dropped on the way (a working folder, a default).
	Notes []string
	// Problem, when not "", is why the server cannot be imported at all.
	Problem string
}

// Need is a value the user has to give as the environment variable Var.
type Need struct {
	Var string
	// What says where the original took it from.
	What string
}

// FileError is a configuration file that exists but could not be read.
type FileError struct {
	Path string
	Err  error
}

func (e FileError) Error() string { return fmt.Sprintf("%s: %v", e.Path, e.Err) }

// Options say where to look.
type Options struct {
	// GOOS picks the folders the clients use; runtime.GOOS when "".
	GOOS string
	// Getenv gives HOME (USERPROFILE on Windows), XDG_CONFIG_HOME and
	// APPDATA; os.Getenv when nil.
	Getenv func(string) string
	// Projects are the folders of CodeHydra's projects, whose own files
	// (.mcp.json, opencode.json, .vscode/mcp.json) are read too.
	Projects []string
}

// source is one file to read and how.
type source struct {
	client, path string
	read         func(f *fileReader, raw map[string]json.RawMessage)
}

// Sources are the files Scan reads, in order, whether they exist or not.
func (o Options) Sources() []string {
	var out []string
	for _, s := range o.sources() {
		out = append(out, s.path)
	}
	return out
}

func (o Options) sources() []source {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	goos := o.GOOS
	if goos == "" {
		goos = runtime.GOOS
	}
	home := getenv("HOME")
	if home == "" {
		home = getenv("USERPROFILE")
	}
	xdg := getenv("XDG_CONFIG_HOME")
	if xdg == "" && home != "" {
		xdg = filepath.Join(home, ".config")
	}
	// Where desktop apps (Electron's userData) keep their settings.
	appData := xdg
	switch goos {
	case "darwin":
		appData = filepath.Join(home, "Library", "Application Support")
	case "windows":
		appData = getenv("APPDATA")
		if appData == "" && home != "" {
			appData = filepath.Join(home, "AppData", "Roaming")
		}
	}
	var out []source
	add := func(client, dir string, read func(*fileReader, map[string]json.RawMessage), parts ...string) {
		if dir == "" {
			return
		}
		out = append(out, source{client, filepath.Join(append([]string{dir}, parts...)...), read})
	}
	add(ClaudeDesktop, appData, readClaudeDesktop, "Claude", "claude_desktop_config.json")
	add(ClaudeCode, home, readClaudeJSON, ".claude.json")
	for _, name := range []string{"opencode.json", "opencode.jsonc", "config.json"} {
		add(Opencode, xdg, readOpencode, "opencode", name)
	}
	add(VSCode, appData, readVSCode, "Code", "User", "mcp.json")
	for _, p := range o.Projects {
		add(ClaudeCode, p, readMCPJSON, ".mcp.json")
		add(Opencode, p, readOpencode, "opencode.json")
		add(Opencode, p, readOpencode, "opencode.jsonc")
		add(VSCode, p, readVSCode, ".vscode", "mcp.json")
	}
	return out
}

// Scan reads every file of o.Sources that exists. A file that cannot be
// read or is not a configuration is in errs; a missing one is not.
func Scan(o Options) (found []Found, errs []FileError) {
	for _, s := range o.sources() {
		data, err := os.ReadFile(s.path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, FileError{s.path, err})
			continue
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(jsoncToJSON(data), &raw); err != nil {
			errs = append(errs, FileError{s.path, fmt.Errorf("not a JSON object: %w", err)})
			continue
		}
		f := &fileReader{client: s.client, path: s.path, home: o.home()}
		s.read(f, raw)
		found = append(found, f.found...)
		errs = append(errs, f.errs...)
	}
	return found, errs
}

func (o Options) home() string {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if h := getenv("HOME"); h != "" {
		return h
	}
	return getenv("USERPROFILE")
}

// fileReader collects what one file holds.
type fileReader struct {
	client, path, home string
	found              []Found
	errs               []FileError
}

// servers decodes raw (a map of name to server) and hands each server to
// convert, in the order of their names.
func (f *fileReader) servers(raw json.RawMessage, where string, convert func(name string, raw json.RawMessage) Found) {
	if len(raw) == 0 || string(raw) == "null" {
		return
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		f.errs = append(f.errs, FileError{f.path, fmt.Errorf("its servers are not an object of name to server: %w", err)})
		return
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fd := convert(n, m[n])
		fd.Client, fd.Source, fd.Where, fd.Name = f.client, f.path, where, n
		f.found = append(f.found, fd)
	}
}

// decode reads one server's JSON into v, or says why it cannot be.
func decode(raw json.RawMessage, v any) string {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Sprintf("cannot be read: %v", err)
	}
	return ""
}
