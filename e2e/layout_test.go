package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"codehydra/internal/testenv"
)

// layout says, for every package of the module, which of the module's
// packages it may import: a name ending in "/" allows that folder's
// packages. Packages depend in one direction: the command line on the
// daemon, the daemon on the parts, the parts on the domain (workspace),
// and everything on the helpers in internal/, which import only each
// other. A package missing here fails the test.
var layout = map[string][]string{
	"codehydra":                   {"codehydra/internal/cli", "codehydra/internal/sandbox"},
	"codehydra/cmd/codehydra-gui": {"codehydra/internal/cli", "codehydra/internal/gui", "codehydra/internal/sandbox", "codehydra/internal/cleanlocale"},
	"codehydra/internal/gui":      {"codehydra/app", "codehydra/gateway", "codehydra/internal/cli", "codehydra/internal/daemon", "codehydra/internal/mcpstdio", "codehydra/internal/paths"},
	"codehydra/internal/cli":      {"codehydra/internal/daemon", "codehydra/internal/mcpstdio", "codehydra/mcp", "codehydra/workspace", helpers},
	"codehydra/internal/daemon": {"codehydra/gateway", "codehydra/mcp", "codehydra/opencode", "codehydra/prepare",
		"codehydra/previews", "codehydra/tasks", "codehydra/workspace", "codehydra/workspace/statuscache", "codehydra/internal/mcpstdio", "codehydra/internal/pullrequest", helpers},
	"codehydra/internal/mcpstdio":              {"codehydra/mcp", helpers},
	"codehydra/app":                            {"codehydra/app/window", "codehydra/app/bridge", "codehydra/workspace", "codehydra/mcp", "codehydra/prepare", "codehydra/assets", helpers},
	"codehydra/app/window":                     {"codehydra/workspace", "codehydra/prepare", helpers},
	"codehydra/app/bridge":                     {"codehydra/app/window", "codehydra/workspace", "codehydra/prepare", helpers},
	"codehydra/app/internal/uitest":            {"codehydra/workspace", helpers},
	"codehydra/gateway":                        {"codehydra/mcp", "codehydra/workspace", helpers},
	"codehydra/mcp":                            {"codehydra/workspace", "codehydra/wsfs", "codehydra/tasks", helpers},
	"codehydra/opencode":                       {"codehydra/workspace", helpers},
	"codehydra/prepare":                        {"codehydra/workspace", helpers},
	"codehydra/previews":                       {"codehydra/workspace", helpers},
	"codehydra/wsfs":                           {"codehydra/workspace", helpers},
	"codehydra/tasks":                          {"codehydra/workspace", helpers},
	"codehydra/workspace":                      {helpers},
	"codehydra/workspace/statuscache":          {"codehydra/workspace", helpers},
	"codehydra/assets":                         {},
	"codehydra/build/bench":                    {"codehydra/gateway", "codehydra/mcp", "codehydra/workspace", "codehydra/workspace/statuscache", helpers},
	"codehydra/e2e":                            {},
	"codehydra/internal/atomicfile":            {helpers},
	"codehydra/internal/cleanlocale":           {helpers},
	"codehydra/internal/fakemodel":             {helpers},
	"codehydra/internal/gitenv":                {helpers},
	"codehydra/internal/inhibit":               {helpers},
	"codehydra/internal/instance":              {helpers},
	"codehydra/internal/mcpimport":             {helpers},
	"codehydra/internal/netstat":               {helpers},
	"codehydra/internal/paths":                 {helpers},
	"codehydra/internal/pullrequest":           {"codehydra/workspace", helpers},
	"codehydra/internal/proc":                  {helpers},
	"codehydra/internal/reap":                  {helpers},
	"codehydra/internal/rotate":                {helpers},
	"codehydra/internal/sandbox":               {helpers},
	"codehydra/internal/settings":              {helpers},
	"codehydra/internal/sse":                   {helpers},
	"codehydra/internal/testenv":               {helpers},
	"codehydra/internal/testenv/naivefs":       {helpers},
	"codehydra/internal/otlp":                  {helpers},
	"codehydra/internal/tracectx":              {helpers},
	"codehydra/internal/tty":                   {helpers},
	"codehydra/opencode/internal/fakeopencode": {},
	"codehydra/tasks/taskstest":                {helpers},
}

// helpers stands for the helper packages of internal/: every package
// under it but the command line, the daemon, the GUI program's part, the
// mcp-stdio bridge and the pull requests (which build on the workspace
// domain).
const helpers = "helpers"

var notHelpers = []string{"codehydra/internal/cli", "codehydra/internal/daemon", "codehydra/internal/gui", "codehydra/internal/mcpstdio", "codehydra/internal/pullrequest"}

// noFyne are the packages whose tests must build in seconds, and the core
// program (codehydra, with the command line and the daemon), which links
// no GUI toolkit: Fyne (cgo, minutes cold) stays out of them.
var noFyne = []string{"codehydra", "codehydra/internal/cli", "codehydra/internal/daemon", "codehydra/workspace", "codehydra/workspace/statuscache", "codehydra/mcp", "codehydra/opencode",
	"codehydra/prepare", "codehydra/gateway", "codehydra/wsfs", "codehydra/tasks", "codehydra/internal/mcpstdio",
	"codehydra/internal/mcpimport", "codehydra/internal/inhibit"}

type listedPackage struct {
	ImportPath, Dir string
	Imports, Deps   []string
}

// modulePackages lists the module's packages with their imports.
func modulePackages(t *testing.T) map[string]listedPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Dir,Imports,Deps", "codehydra/...")
	cmd.Env = testenv.MachineEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string]listedPackage{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listedPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs[p.ImportPath] = p
	}
	return pkgs
}

// TestPackagesImportOnlyWhatTheLayoutAllows pins the layout above (and
// the README's table): every package is in it, imports only what it
// allows, and Fyne stays out of the packages whose tests must build in
// seconds.
func TestPackagesImportOnlyWhatTheLayoutAllows(t *testing.T) {
	pkgs := modulePackages(t)
	for pkg, p := range pkgs {
		allowed, ok := layout[pkg]
		if !ok {
			t.Errorf("package %s is not in the layout: add it to this test and to the README's layout table", pkg)
			continue
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, "codehydra/") && !allowedImport(imp, allowed) {
				t.Errorf("%s imports %s; the layout allows only %v", pkg, imp, allowed)
			}
		}
	}
	for pkg := range layout {
		if _, ok := pkgs[pkg]; !ok {
			t.Errorf("package %s is gone; update the layout (README and this test)", pkg)
		}
	}
	for _, pkg := range noFyne {
		for _, dep := range pkgs[pkg].Deps {
			if strings.HasPrefix(dep, "fyne.io/") {
				t.Errorf("%s depends on %s: keep Fyne out of it, so that its tests build in seconds (and the core program stays without a GUI toolkit)", pkg, dep)
				break
			}
		}
	}
	// The OpenTelemetry SDK's OTLP exporters link these to send a few
	// messages over HTTP, 7 MB of the core's resident pages;
	// internal/otlp writes those messages itself.
	for _, dep := range pkgs["codehydra"].Deps {
		if strings.HasPrefix(dep, "google.golang.org/grpc") || strings.HasPrefix(dep, "google.golang.org/protobuf") {
			t.Errorf("the core program depends on %s: export telemetry with internal/otlp, not the SDK's exporters", dep)
			break
		}
	}
}

func allowedImport(imp string, allowed []string) bool {
	for _, a := range allowed {
		switch {
		case a == helpers:
			if strings.HasPrefix(imp, "codehydra/internal/") && !slices.Contains(notHelpers, imp) {
				return true
			}
		case imp == a, strings.HasSuffix(a, "/") && strings.HasPrefix(imp, a):
			return true
		}
	}
	return false
}

// layoutRow is a row of the README's layout table: its first column,
// a path in backquotes.
var layoutRow = regexp.MustCompile("^\\| `([^`]+)`")

// TestTheReadmesLayoutNamesEveryPackage: the README's layout table has a
// row for every package's folder, and every row names what is there.
func TestTheReadmesLayoutNamesEveryPackage(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := bytes.Cut(readme, []byte("\n## Layout\n"))
	section, _, _ = bytes.Cut(section, []byte("\n## "))
	rows := map[string]bool{}
	for _, line := range strings.Split(string(section), "\n") {
		if m := layoutRow.FindStringSubmatch(line); m != nil {
			rows[m[1]] = true
		}
	}
	if len(rows) == 0 {
		t.Fatal("the README has no layout table under \"## Layout\"")
	}
	for pkg := range modulePackages(t) {
		row := strings.TrimPrefix(pkg, "codehydra/") + "/"
		if pkg == "codehydra" {
			row = "main.go"
		}
		if !rows[row] {
			t.Errorf("the README's layout table has no row `%s` for package %s", row, pkg)
		}
	}
	for row := range rows {
		if _, err := os.Stat(path.Join("..", row)); err != nil {
			t.Errorf("the README's layout table names `%s`, which is not in the repository", row)
		}
	}
}
