package opencode

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// InstallHint tells the user how to get opencode.
const InstallHint = "install it with `npm install -g opencode-ai@1.18.33`, or run `make run`, or set opencodeBin in settings"

// FindBinary looks for the opencode binary again and remembers the answer
// for AgentStatus: Bin, else `opencode` on PATH, else
// ToolsDir/node_modules/.bin/opencode (on Windows the opencode.exe that
// npm's opencode.cmd runs: see binary_windows.go). found is false if none exists; path
// is then the place that was expected. Every agent start calls it, so an
// opencode installed meanwhile is found without a restart of the app.
func (s *Supervisor) FindBinary() (path string, found bool) {
	path, found = s.lookupBinary()
	s.mu.Lock()
	s.bin, s.binFound = path, found
	s.mu.Unlock()
	return path, found
}

func (s *Supervisor) lookupBinary() (string, bool) {
	if b := s.opts.Bin; b != "" {
		if !strings.ContainsAny(b, `/\`) {
			if p, err := s.opts.LookPath(b); err == nil {
				return p, true
			}
			return b, false
		}
		return b, isExecutable(b)
	}
	if p, err := s.opts.LookPath("opencode"); err == nil {
		return nativeBinary(p), true
	}
	p := toolsBinary(s.opts.ToolsDir)
	if isExecutable(p) {
		return p, true
	}
	return p, false
}

// npmShimTarget is the opencode.exe that npm's opencode.cmd at path runs
// (see binary_windows.go), or path when it is no such shim or the exe is
// not where npm puts it. It is portable so that Linux tests can check it.
func npmShimTarget(path string) string {
	if !strings.EqualFold(filepath.Ext(path), ".cmd") {
		return path
	}
	dir := filepath.Dir(path)
	for _, modules := range []string{
		filepath.Dir(dir),                  // <prefix>/node_modules/.bin/opencode.cmd
		filepath.Join(dir, "node_modules"), // %APPDATA%\npm\opencode.cmd (npm install -g)
	} {
		exe := filepath.Join(modules, "opencode-ai", "bin", "opencode.exe")
		if isExecutable(exe) {
			return exe
		}
	}
	return path
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	if err != nil || fi.IsDir() {
		return false
	}
	if filepath.Ext(p) != "" && os.PathSeparator == '\\' {
		return true
	}
	return fi.Mode()&0o111 != 0
}

func (s *Supervisor) notFoundDetail() string {
	if s.opts.Bin != "" {
		return fmt.Sprintf("opencode not found at %s (opencodeBin in settings) — fix opencodeBin, "+
			"or clear it and install opencode with `npm install -g opencode-ai@1.18.33` or `make run`", s.opts.Bin)
	}
	return "opencode not found — " + InstallHint
}
