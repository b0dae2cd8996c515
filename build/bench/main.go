// Command bench measures CodeHydra on this machine and writes the figures as
// a markdown table into docs/BENCHMARKS.md (between the bench:begin and
// bench:end markers; the rest of the file, such as the GUI section that
// build/bench-gui.sh writes, is kept). `make bench` runs it:
//
//	go run ./build/bench [-out docs/BENCHMARKS.md] [-quick]
//
// Everything is measured against the real parts: the codehydra binary built
// from this tree (`serve`, real HTTP, real MCP sessions), the real
// workspace.Manager, and real git on generated repositories, which are kept
// under -cache so that the 100,000-file one is generated once. Ratios compare
// CodeHydra with the bare git commands it stands in for, timed in the same
// run on the same repository.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	if mode := os.Getenv(bareEnv); mode != "" {
		os.Exit(runBareServer(mode == "stateless"))
	}
	os.Exit(run())
}

// options are the command line.
type options struct {
	out      string
	cacheDir string
	quick    bool
	only     string
	sizes    []int
	// gc are further garbage collector settings to measure serve with,
	// side by side with its own (part cpu), e.g. "GOGC=100" or
	// "GOGC=400 GOMEMLIMIT=24MiB".
	gc []string
}

func run() int {
	var o options
	flag.StringVar(&o.out, "out", "docs/BENCHMARKS.md", "markdown file to write the table into (\"\" = print only)")
	flag.StringVar(&o.cacheDir, "cache", filepath.Join(os.TempDir(), "codehydra-bench-cache"), "where generated repositories are kept between runs")
	flag.BoolVar(&o.quick, "quick", false, "small sizes and short runs, to check that the bench works")
	flag.StringVar(&o.only, "only", "", "run only these parts (comma-separated: status, create, server, cpu, gui, gateway, sandbox, hibernate) and print; with -out given, write only the sections of their own (gateway, sandbox, hibernate)")
	gc := flag.String("gc", "", "also measure the CPU per call of serve with these garbage collector settings, side by side (comma-separated; each e.g. \"GOGC=100\" or \"GOGC=400 GOMEMLIMIT=24MiB\")")
	flag.Parse()
	if *gc != "" {
		for _, s := range strings.Split(*gc, ",") {
			o.gc = append(o.gc, strings.TrimSpace(s))
		}
	}
	if o.only != "" && !flagGiven("out") {
		o.out = ""
	}
	o.sizes = []int{1_000, 20_000, 100_000}
	if o.quick {
		o.sizes = []int{1_000, 5_000}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	b, err := newBench(ctx, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		return 1
	}
	defer b.cleanup()
	if err := b.runAll(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		return 1
	}
	doc := b.report()
	fmt.Print(doc)
	if o.out != "" && o.only == "" {
		if err := writeSection(o.out, doc); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "bench: wrote %s\n", o.out)
	}
	if err := b.writeGatewaySection(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		return 1
	}
	if err := b.writeSandboxSection(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		return 1
	}
	if err := b.writeHibernateSection(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		return 1
	}
	return 0
}

// flagGiven reports whether the flag name was on the command line.
func flagGiven(name string) bool {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// bench is one run: where things are, and the results so far.
type bench struct {
	ctx  context.Context
	opts options
	root string // the module's folder
	tmp  string // scratch folder, removed at the end
	bin  string // the codehydra binary built for this run
	log  io.Writer

	machine       machineInfo
	status        []statusResult
	changes       []changeResult
	creates       []createResult
	calls         []callResult
	cpu           []cpuResult
	gitRuns       []gitRunResult
	startups      []startupResult
	rss           []rssResult
	gui           *guiResult
	guiNote       string
	gateway       *gatewayResult // its own section: gateway.go
	gatewayNote   string
	sandbox       *sandboxResult // its own section: sandbox.go
	sandboxNote   string
	hibernate     *hibernateResult // its own section: hibernate.go
	hibernateNote string
	notes         []string
}

func newBench(ctx context.Context, o options) (*bench, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "codehydra-bench-")
	if err != nil {
		return nil, err
	}
	tmp, _ = filepath.EvalSymlinks(tmp)
	b := &bench{ctx: ctx, opts: o, root: root, tmp: tmp, log: os.Stderr}
	// Git must not depend on this machine's configuration.
	for k, v := range map[string]string{
		"GIT_CONFIG_GLOBAL":   "/dev/null",
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME":     "Bench",
		"GIT_AUTHOR_EMAIL":    "bench@example.com",
		"GIT_COMMITTER_NAME":  "Bench",
		"GIT_COMMITTER_EMAIL": "bench@example.com",
		"GIT_TERMINAL_PROMPT": "0",
	} {
		os.Setenv(k, v)
	}
	return b, nil
}

func (b *bench) cleanup() { os.RemoveAll(b.tmp) }

func (b *bench) say(format string, args ...any) {
	fmt.Fprintf(b.log, "bench: "+format+"\n", args...)
}

func (b *bench) runAll() error {
	b.machine = readMachine(b.ctx)
	b.say("building codehydra and codehydra-gui")
	b.bin = filepath.Join(b.tmp, "codehydra")
	for out, pkg := range map[string]string{b.bin: ".", b.bin + "-gui": "./cmd/codehydra-gui"} {
		build := exec.CommandContext(b.ctx, "go", "build", "-o", out, pkg)
		build.Dir, build.Stdout, build.Stderr = b.root, b.log, b.log
		if err := build.Run(); err != nil {
			return fmt.Errorf("build %s: %w", filepath.Base(out), err)
		}
	}
	// A part with a section of its own that fails leaves its section as
	// it was and says why, so that one part's failure (on a loaded
	// machine, a server slow to start) does not lose the others' figures.
	steps := []struct {
		name, key string
		fn        func() error
		failed    func(error)
	}{
		{"status", "status", b.benchStatus, nil},
		{"create and delete", "create", b.benchCreateDelete, nil},
		{"server", "server", b.benchServer, nil},
		{"CPU per call", "cpu", b.benchCPUServer, nil},
		{"the tray app", "gui", b.benchGUI, nil},
		{"the MCP gateway", "gateway", b.benchGateway, func(err error) { b.gateway, b.gatewayNote = nil, "not measured: "+err.Error() }},
		{"the kernel sandbox", "sandbox", b.benchSandbox, func(err error) { b.sandbox, b.sandboxNote = nil, "not measured: "+err.Error() }},
		{"hibernation", "hibernate", b.benchHibernate, func(err error) { b.hibernate, b.hibernateNote = nil, "not measured: "+err.Error() }},
	}
	for _, s := range steps {
		if err := b.ctx.Err(); err != nil {
			return err
		}
		if b.opts.only != "" && !slices.Contains(strings.Split(b.opts.only, ","), s.key) {
			continue
		}
		b.say("measuring %s", s.name)
		if err := s.fn(); err != nil {
			if s.failed == nil || b.ctx.Err() != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			s.failed(err)
			b.notes = append(b.notes, fmt.Sprintf("%s failed in this run (%v); its section below is from an earlier run.", s.name, err))
			b.say("%s: not measured: %v", s.name, err)
		}
	}
	return nil
}

// moduleRoot finds the folder of go.mod of module codehydra, from the
// working folder up.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(strings.TrimSpace(string(data)), "module codehydra") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("run the bench inside the codehydra module")
		}
		dir = parent
	}
}

// durations helpers.

func median(d []time.Duration) time.Duration { return percentile(d, 50) }

// percentile returns the p-th percentile (nearest rank) of d.
func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.5) - 1
	return s[max(0, min(len(s)-1, i))]
}

// ms formats d in milliseconds, or microseconds below 1 ms.
func ms(d time.Duration) string {
	switch {
	case d == 0:
		return "–"
	case d < time.Millisecond:
		return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond))
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	}
}

// ratio formats a/b as "×N".
func ratio(a, b time.Duration) string {
	if a == 0 || b == 0 {
		return "–"
	}
	r := float64(a) / float64(b)
	if r < 0.01 {
		return fmt.Sprintf("×%.4f", r)
	}
	return fmt.Sprintf("×%.2f", r)
}

// timeIt runs fn n times and returns each duration.
func timeIt(n int, fn func() error) ([]time.Duration, error) {
	out := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		if err := fn(); err != nil {
			return nil, err
		}
		out = append(out, time.Since(t0))
	}
	return out, nil
}

// runtimeInfo names the toolchain the bench ran with.
func runtimeInfo() string { return runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH }
