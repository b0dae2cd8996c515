package testenv

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// StartReadyApp runs the test binary again as a helper app: with env set
// to spec as JSON, which the package's TestMain reads to act as the app
// instead of running tests. It returns the app once it printed "READY"
// and kills it when the test ends.
func StartReadyApp(t testing.TB, env string, spec any) *exec.Cmd {
	t.Helper()
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	app := exec.Command(os.Args[0], "-test.run=^$")
	app.Env = append(os.Environ(), env+"="+string(b))
	out, err := app.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = app.Process.Kill()
		_ = app.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "READY" {
		t.Fatalf("app did not get ready: %q, %v", line, err)
	}
	return app
}
