package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"codehydra/internal/testenv"
	"codehydra/mcp"
)

// conformanceExpectedFailures lists the suite's scenarios that cannot pass
// on CodeHydra, one "scenario: why" a line.
const conformanceExpectedFailures = "../build/conformance-expected-failures.txt"

// TestMCPConformanceSuite runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, its active server scenarios) against
// the built binary's `serve`, through a proxy that adds what the suite
// cannot send: the token. Every scenario must pass except those in
// conformanceExpectedFailures, and each of those must still fail, so that
// the file stays true.
func TestMCPConformanceSuite(t *testing.T) {
	suite := testenv.ConformanceSuite(t)
	expected := readExpectedFailures(t, conformanceExpectedFailures)
	bin := builtApp(t)
	isolate(t)
	repo := testenv.GitRepo(t, "repo")
	info := startServe(t, bin, repo).info
	proxy := conformanceProxy(t, info.MCPPort, info.Token, repo)

	out := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, suite.Node, suite.Suite, "server", "--url", proxy+mcp.Path, "-o", out)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	cmd.WaitDelay = 5 * time.Second
	// The suite exits non-zero on any failing scenario, expected or not:
	// the verdict is made below from its per-scenario results.
	stdout, runErr := cmd.CombinedOutput()
	ran := ranScenarios(string(stdout))
	if len(ran) == 0 {
		t.Fatalf("the conformance suite ran no scenario (%v):\n%s", runErr, stdout)
	}
	checks := readScenarioChecks(t, out)
	v := judgeConformance(ran, checks, expected)
	for _, p := range v.problems {
		t.Error(p)
	}
	t.Logf("conformance: %d scenarios passed (%s); %d failed as expected (%s)",
		len(v.passed), strings.Join(v.passed, ", "), len(v.failedAsExpected), strings.Join(v.failedAsExpected, ", "))
	if t.Failed() {
		t.Logf("the suite's output:\n%s", stdout)
	}
}

// conformanceVerdict is what one run of the suite comes to.
type conformanceVerdict struct {
	passed, failedAsExpected []string
	// problems fail the test: a scenario failing that is not expected to,
	// one expected to fail that passes, an expected failure the suite does
	// not have.
	problems []string
}

// judgeConformance compares the scenarios the suite ran, and the checks it
// recorded for each, with the expected failures (scenario -> why).
func judgeConformance(ran []string, checks map[string][]conformanceCheck, expected map[string]string) conformanceVerdict {
	var v conformanceVerdict
	for _, name := range ran {
		bad := failedChecks(checks[name])
		if _, ok := checks[name]; !ok {
			bad = []string{"the suite recorded no result for it (see its output)"}
		}
		why, isExpected := expected[name]
		switch {
		case len(bad) > 0 && !isExpected:
			v.problems = append(v.problems, fmt.Sprintf("conformance scenario %s fails:\n  %s", name, strings.Join(bad, "\n  ")))
		case len(bad) == 0 && isExpected:
			v.problems = append(v.problems, fmt.Sprintf("conformance scenario %s now passes: remove it from %s (it says: %s)", name, conformanceExpectedFailures, why))
		case len(bad) > 0 && !allMissingFixtures(bad):
			v.problems = append(v.problems, fmt.Sprintf("conformance scenario %s is expected to fail only for want of the suite's fixtures (%s), but fails otherwise:\n  %s", name, why, strings.Join(bad, "\n  ")))
		case len(bad) > 0:
			v.failedAsExpected = append(v.failedAsExpected, name)
		default:
			v.passed = append(v.passed, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(expected)) {
		if !slices.Contains(ran, name) {
			v.problems = append(v.problems, fmt.Sprintf("%s names %s, which the suite did not run", conformanceExpectedFailures, name))
		}
	}
	return v
}

// conformanceProxy serves on a loopback port of its own and forwards to the
// MCP server on port, adding the caller's token and workspace the way
// opencode does. The server insists on its own port in Host (and
// CrossOriginProtection compares Origin with Host), so a Host or Origin
// naming the proxy's loopback address is rewritten to name the server's
// port instead; any other Host or Origin goes through unchanged, so that the
// suite's DNS-rebinding scenario still meets the server's real check.
// It returns the proxy's base URL.
func conformanceProxy(t testing.TB, port int, token, workspace string) string {
	t.Helper()
	target := &url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	srv := httptest.NewUnstartedServer(nil)
	_, own, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	retarget := func(hostport string) string {
		name, p, err := net.SplitHostPort(hostport)
		if err != nil || p != own || !slices.Contains([]string{"127.0.0.1", "localhost", "::1"}, name) {
			return hostport
		}
		return net.JoinHostPort(name, strconv.Itoa(port))
	}
	srv.Config.Handler = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = target.Scheme, target.Host
			pr.Out.Host = retarget(pr.In.Host)
			if o, err := url.Parse(pr.In.Header.Get("Origin")); err == nil && o.Host != "" {
				o.Host = retarget(o.Host)
				pr.Out.Header.Set("Origin", o.String())
			}
			pr.Out.Header.Set("Authorization", "Bearer "+token)
			pr.Out.Header.Set(mcp.WorkspaceHeader, workspace)
		},
		// Event streams must reach the suite as they are written.
		FlushInterval: -1,
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// scenarioLine is how the suite announces each scenario it runs.
var scenarioLine = regexp.MustCompile(`^=== Running scenario: (\S+) ===$`)

// ranScenarios lists the scenarios the suite's output says it ran.
func ranScenarios(output string) []string {
	var ran []string
	sc := bufio.NewScanner(strings.NewReader(output))
	for sc.Scan() {
		if m := scenarioLine.FindStringSubmatch(strings.TrimSpace(sc.Text())); m != nil {
			ran = append(ran, m[1])
		}
	}
	return ran
}

// conformanceCheck is one check of the suite's checks.json.
type conformanceCheck struct {
	ID           string `json:"id"`
	Status       string `json:"status"` // SUCCESS, FAILURE, WARNING, INFO
	Description  string `json:"description"`
	ErrorMessage string `json:"errorMessage"`
}

// resultDir is the folder the suite (-o) writes a scenario's checks.json
// into: server-<scenario>-<ISO time with ':' and '.' as '-'>.
var resultDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)

// readScenarioChecks reads the checks the suite wrote under dir, by
// scenario.
func readScenarioChecks(t *testing.T, dir string) map[string][]conformanceCheck {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string][]conformanceCheck{}
	for _, e := range entries {
		m := resultDir.FindStringSubmatch(e.Name())
		if m == nil {
			t.Fatalf("unexpected result folder %s from the conformance suite", e.Name())
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name(), "checks.json"))
		if err != nil {
			t.Fatal(err)
		}
		var cs []conformanceCheck
		if err := json.Unmarshal(data, &cs); err != nil {
			t.Fatalf("read %s's checks: %v", m[1], err)
		}
		checks[m[1]] = cs
	}
	return checks
}

// missingFixture is how the server answers for a fixture tool, prompt or
// resource of the suite's that it does not have, or a capability it does
// not declare for want of them.
var missingFixture = regexp.MustCompile(`unknown tool "test_|unknown prompt "test_|Resource not found|no resource test://|method not found: "(completion/complete|resources/subscribe)"`)

// allMissingFixtures reports whether every failed check (as failedChecks
// describes them) failed for want of a fixture, so that an expected failure
// that starts failing for another reason (a 401, a crash) is not hidden.
func allMissingFixtures(bad []string) bool {
	for _, b := range bad {
		if !missingFixture.MatchString(b) {
			return false
		}
	}
	return true
}

// failedChecks describes the checks that fail a scenario. Like the suite's
// own baseline comparison, a warning fails it too.
func failedChecks(checks []conformanceCheck) []string {
	var bad []string
	for _, c := range checks {
		if c.Status == "FAILURE" || c.Status == "WARNING" {
			msg := c.ErrorMessage
			if msg == "" {
				msg = c.Description
			}
			bad = append(bad, fmt.Sprintf("%s %s: %s", c.Status, c.ID, msg))
		}
	}
	return bad
}

// readExpectedFailures reads the expected-failures file: one
// "scenario: why it cannot pass" a line; blank lines and lines starting
// with # are comments. A line without a reason is an error.
func readExpectedFailures(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	expected := map[string]string{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, why, _ := strings.Cut(line, ":")
		name, why = strings.TrimSpace(name), strings.TrimSpace(why)
		if name == "" || why == "" {
			t.Fatalf("%s:%d: want \"scenario: why it cannot pass\", got %q", path, i+1, line)
		}
		if _, dup := expected[name]; dup {
			t.Fatalf("%s:%d: %s is listed twice", path, i+1, name)
		}
		expected[name] = why
	}
	return expected
}
