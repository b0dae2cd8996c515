package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestPackagesImportOnlyWhatTheLayoutAllows pins the README's layout table:
// packages depend inward (the domain knows nothing of MCP, OpenCode or the
// GUI), and Fyne stays out of the packages whose tests must build in
// seconds.
func TestPackagesImportOnlyWhatTheLayoutAllows(t *testing.T) {
	allowed := map[string][]string{
		"codehydra/workspace":             {"codehydra/internal/"},
		"codehydra/workspace/statuscache": {"codehydra/workspace", "codehydra/internal/"},
		"codehydra/mcp":                   {"codehydra/workspace", "codehydra/wsfs", "codehydra/tasks", "codehydra/internal/"},
		"codehydra/opencode":              {"codehydra/workspace", "codehydra/internal/"},
		"codehydra/prepare":               {"codehydra/workspace", "codehydra/internal/"},
		"codehydra/gateway":               {"codehydra/mcp", "codehydra/internal/"},
		"codehydra/wsfs":                  {"codehydra/workspace", "codehydra/internal/"},
		"codehydra/tasks":                 {"codehydra/internal/"},
		"codehydra/app":                   {"codehydra/app/window", "codehydra/app/bridge", "codehydra/workspace", "codehydra/mcp", "codehydra/prepare", "codehydra/assets", "codehydra/internal/"},
		"codehydra/app/bridge":            {"codehydra/app/window", "codehydra/workspace", "codehydra/prepare", "codehydra/internal/"},
		"codehydra/app/window":            {"codehydra/workspace", "codehydra/prepare", "codehydra/internal/"},
		"codehydra/app/internal/uitest":   {"codehydra/workspace", "codehydra/internal/"},
	}
	noFyne := []string{"codehydra/workspace", "codehydra/workspace/statuscache", "codehydra/mcp", "codehydra/opencode", "codehydra/prepare", "codehydra/gateway", "codehydra/wsfs", "codehydra/tasks"}

	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,Deps", "./...")
	cmd.Env = machineEnv
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string]struct{ Imports, Deps []string }{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath    string
			Imports, Deps []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs[p.ImportPath] = struct{ Imports, Deps []string }{p.Imports, p.Deps}
	}
	for pkg, ok := range allowed {
		p, found := pkgs[pkg]
		if !found {
			t.Errorf("package %s is gone; update the layout (README and this test)", pkg)
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, "codehydra") || allowedImport(imp, ok) {
				continue
			}
			t.Errorf("%s imports %s; the layout allows only %v", pkg, imp, ok)
		}
	}
	for _, pkg := range noFyne {
		for _, dep := range pkgs[pkg].Deps {
			if strings.HasPrefix(dep, "fyne.io/") {
				t.Errorf("%s depends on %s: keep Fyne out of it, so that its tests build in seconds", pkg, dep)
				break
			}
		}
	}
}

func allowedImport(imp string, allowed []string) bool {
	for _, a := range allowed {
		if imp == a || (strings.HasSuffix(a, "/") && strings.HasPrefix(imp, a)) {
			return true
		}
	}
	return false
}
