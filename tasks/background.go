package tasks

// Background runs: a task that outlives the call that started it (a dev
// server), one running run per task per workspace, its output kept in a
// tail that is read a page at a time. Each run has a record in
// RunsOptions.Dir while it runs, so that the next launch after a crash
// reaps what it left (package reap, as for agents).

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"codehydra/internal/proc"
	"codehydra/internal/reap"
	"codehydra/internal/sandbox"
)

// Defaults of RunsOptions.
const DefaultRunOutput = 1 << 20

// The states of a Run.
const (
	StateRunning = "running"
	// StateExited: it ended by itself with exit code 0.
	StateExited = "exited"
	// StateStopped: Stop (StopAll, Close) ended it.
	StateStopped = "stopped"
	// StateFailed: it ended by itself otherwise (an exit code other than
	// 0, a signal from elsewhere).
	StateFailed = "failed"
)

// markerEnv names the variable that carries a run's id into the
// environment of every process of the run, for the reaper.
const markerEnv = "CODEHYDRA_TASK_RUN_ID"

var (
	// ErrAlreadyRunning is the error of a Start of a task that runs in its
	// workspace already.
	ErrAlreadyRunning = errors.New("already running")
	// ErrNoRun is the error of a Stop or Output of a run that is not there.
	ErrNoRun = errors.New("no such run")
	// ErrClosed is the error of a Start after Close.
	ErrClosed = errors.New("background tasks are stopped")
)

// RunsOptions configure the background runs.
type RunsOptions struct {
	// Dir is the folder of the runs' records (for Reap); "" keeps none.
	Dir string
	// Grace is how long a run's group has between SIGTERM and SIGKILL.
	// Default DefaultGrace.
	Grace time.Duration
	// MaxOutput is how much of the end of a run's output is kept.
	// Default DefaultRunOutput.
	MaxOutput int
	// Listening returns the TCP ports the process trees rooted at pids
	// listen on; nil finds none.
	Listening func(pids []int) []int
	// OnChange hears that a run of the workspace started or ended.
	OnChange func(workspace string)
	Logger   *slog.Logger
}

// StartOptions say what to run in the background.
type StartOptions struct {
	// Workspace is the workspace's path; Name the task's name (e.g.
	// make:dev), one running run each.
	Workspace, Name string
	// Argv is the command line (see Argv), run without a shell in Dir.
	Argv []string
	Dir  string
	// Env is added to the task's environment, after the workspace's port
	// block (see environ).
	Env []string
	// Sandbox, when set, confines the run and all it starts.
	Sandbox *sandbox.Policy
}

// Run is a background run as it stands.
type Run struct {
	ID, Name, Workspace string
	// State is one of the State constants. An ended run is kept until the
	// next start of its task.
	State   string
	Pid     int
	Started time.Time
	// Ended is zero while it runs.
	Ended time.Time
	// ExitCode is set once it exited by itself with one.
	ExitCode *int
	// Ports are the TCP ports its processes listen on, while it runs.
	Ports []int
}

// Marker is the entry (CODEHYDRA_TASK_RUN_ID=<id>) in the environment of
// every process of the run.
func (r Run) Marker() string { return markerEnv + "=" + r.ID }

// Runs starts, lists, stops and reads the background runs of every
// workspace.
type Runs struct {
	o       RunsOptions
	spawner *reap.Spawner

	mu   sync.Mutex
	runs map[runKey]*bgRun
	// held are the tasks that run in the foreground (Hold).
	held   map[runKey]bool
	closed bool
}

type runKey struct{ workspace, name string }

// bgRun is one run; info and stopping are guarded by Runs.mu.
type bgRun struct {
	info     Run
	stopping bool
	// p is set once started is closed (nil if the start failed).
	p       *process
	started chan struct{}
	// done is closed once the run has ended, its record is gone and
	// OnChange has heard of it.
	done chan struct{}
}

// NewRuns returns the background runs, none running. It starts the
// thread that runs are forked from (see reap.Spawner), which Close ends.
func NewRuns(o RunsOptions) *Runs {
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if o.MaxOutput <= 0 {
		o.MaxOutput = DefaultRunOutput
	}
	o.MaxOutput = max(o.MaxOutput, utf8.UTFMax)
	if o.Listening == nil {
		o.Listening = func([]int) []int { return nil }
	}
	if o.OnChange == nil {
		o.OnChange = func(string) {}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Runs{o: o, spawner: reap.NewSpawner(ErrClosed), runs: map[runKey]*bgRun{}, held: map[runKey]bool{}}
}

// Hold reserves the task name of workspace for a run in the foreground
// (RunAndWait), so that a task runs once at a time per workspace, whether
// in the foreground or the background: it fails with ErrAlreadyRunning
// while the task runs in the background or is held already, and Start
// fails so while it is held. release ends the reservation.
func (r *Runs) Hold(workspace, name string) (release func(), err error) {
	key := runKey{workspace, name}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
		return nil, ErrClosed
	case r.held[key] || r.runs[key] != nil && r.runs[key].info.State == StateRunning:
		return nil, fmt.Errorf("%s: %w", name, ErrAlreadyRunning)
	}
	r.held[key] = true
	return sync.OnceFunc(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.held, key)
	}), nil
}

// Start starts o.Argv in the background and returns once it runs. A task
// that runs in its workspace already, in the background or held for the
// foreground (Hold), is refused with ErrAlreadyRunning.
// The run's processes form a tree of their own that ends only with Stop,
// StopAll, Close, or by itself; on Linux the run's first process dies
// with CodeHydra, and Reap ends the rest at the next launch.
func (r *Runs) Start(ctx context.Context, o StartOptions) (Run, error) {
	key := runKey{o.Workspace, o.Name}
	id := newRunID()
	b := &bgRun{
		info:    Run{ID: id, Name: o.Name, Workspace: o.Workspace, State: StateRunning, Started: time.Now()},
		started: make(chan struct{}),
		done:    make(chan struct{}),
	}
	r.mu.Lock()
	old := r.runs[key]
	switch {
	case r.closed:
		r.mu.Unlock()
		return Run{}, ErrClosed
	case old != nil && old.info.State == StateRunning || r.held[key]:
		r.mu.Unlock()
		return Run{}, fmt.Errorf("%s: %w", o.Name, ErrAlreadyRunning)
	}
	r.runs[key] = b
	r.mu.Unlock()

	marker := markerEnv + "=" + id
	p, err := start(ctx, launch{argv: o.Argv, dir: o.Dir, workspace: o.Workspace, env: append(slices.Clip(o.Env), marker), marker: marker,
		sandbox: o.Sandbox, spawner: r.spawner, maxOutput: r.o.MaxOutput})
	r.mu.Lock()
	if err != nil {
		r.runs[key] = old
		if old == nil {
			delete(r.runs, key)
		}
		r.mu.Unlock()
		close(b.started)
		close(b.done)
		return Run{}, fmt.Errorf("start %s: %w", o.Name, err)
	}
	b.p = p
	b.info.Pid = p.Pid()
	info := b.info
	r.mu.Unlock()
	close(b.started)
	r.record(b)
	go r.watch(key, b)
	r.o.Logger.Info("background task started", slog.String("workspace", o.Workspace), slog.String("task", o.Name),
		slog.String("id", id), slog.Int("pid", info.Pid))
	r.o.OnChange(o.Workspace)
	return info, nil
}

// watch waits for the end of b, records how it ended and drops its record.
func (r *Runs) watch(key runKey, b *bgRun) {
	<-b.p.Done()
	b.p.drain()
	r.forget(b)
	st := b.p.State()
	r.mu.Lock()
	b.info.Ended = time.Now()
	switch {
	case b.stopping:
		b.info.State = StateStopped
	case st != nil && st.ExitCode() == 0:
		b.info.State = StateExited
	default:
		b.info.State = StateFailed
	}
	if st != nil && st.ExitCode() >= 0 && !b.stopping {
		code := st.ExitCode()
		b.info.ExitCode = &code
	}
	info := b.info
	r.mu.Unlock()
	r.o.Logger.Info("background task ended", slog.String("workspace", key.workspace), slog.String("task", key.name),
		slog.String("id", info.ID), slog.String("state", info.State))
	// Before done: once Stop returns, OnChange has heard of the end.
	r.o.OnChange(key.workspace)
	close(b.done)
}

// List is the runs of the workspace, running and ended, by task name.
func (r *Runs) List(workspace string) []Run {
	r.mu.Lock()
	var out []Run
	for k, b := range r.runs {
		if k.workspace == workspace && b.info.Pid != 0 {
			out = append(out, b.info)
		}
	}
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b Run) int { return cmp.Compare(a.Name, b.Name) })
	for i := range out {
		if out[i].State == StateRunning {
			out[i].Ports = r.o.Listening([]int{out[i].Pid})
		}
	}
	return out
}

// Pids are the first processes of the workspace's running runs.
func (r *Runs) Pids(workspace string) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var pids []int
	for k, b := range r.runs {
		if k.workspace == workspace && b.info.Pid != 0 && b.info.State == StateRunning {
			pids = append(pids, b.info.Pid)
		}
	}
	slices.Sort(pids)
	return pids
}

// Stop ends the run of the workspace with the id or task name idOrName,
// its whole process group (SIGTERM, then SIGKILL after the grace), and
// waits until it is gone. Stopping a run that has ended is not an error.
func (r *Runs) Stop(ctx context.Context, workspace, idOrName string) (Run, error) {
	b, err := r.find(workspace, idOrName)
	if err != nil {
		return Run{}, err
	}
	if err := r.stop(ctx, b); err != nil {
		return Run{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return b.info, nil
}

// stop stops b and waits until it is gone.
func (r *Runs) stop(ctx context.Context, b *bgRun) error {
	r.mu.Lock()
	if b.info.State == StateRunning {
		b.stopping = true
	}
	r.mu.Unlock()
	select {
	case <-b.started:
	case <-ctx.Done():
		return fmt.Errorf("stop %s: %w", b.info.Name, ctx.Err())
	}
	if b.p == nil {
		return nil // it did not start
	}
	if err := b.p.Stop(ctx, r.o.Grace); err != nil {
		return err
	}
	select {
	case <-b.done:
	case <-ctx.Done():
		return fmt.Errorf("stop %s: %w", b.info.Name, ctx.Err())
	}
	// A run that ended by itself may have left a daemon it started (with
	// setsid or a double fork), which carries its marker.
	proc.EndMarked(ctx, b.info.Marker(), r.o.Grace)
	return nil
}

// StopAll stops every run of the workspace (before it is deleted or
// hibernated), and what the ended ones left running, and waits until they
// are gone.
func (r *Runs) StopAll(ctx context.Context, workspace string) error {
	return r.stopEach(ctx, r.each(workspace))
}

// Close stops every run and the thread they were forked from; Start
// fails from then on.
func (r *Runs) Close(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	err := r.stopEach(ctx, r.each(""))
	r.spawner.Close()
	return err
}

// stopEach stops runs at once and waits for them all.
func (r *Runs) stopEach(ctx context.Context, runs []*bgRun) error {
	errs := make([]error, len(runs))
	var wg sync.WaitGroup
	for i, b := range runs {
		wg.Go(func() { errs[i] = r.stop(ctx, b) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Forget drops the ended runs of the workspace, and their output: call it
// once the workspace is gone (a running run is kept; stop it first).
func (r *Runs) Forget(workspace string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, b := range r.runs {
		if k.workspace == workspace && b.info.State != StateRunning {
			delete(r.runs, k)
		}
	}
}

// each is the runs of the workspace ("": of all), ended or not.
func (r *Runs) each(workspace string) []*bgRun {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*bgRun
	for k, b := range r.runs {
		if workspace == "" || k.workspace == workspace {
			out = append(out, b)
		}
	}
	return out
}

// Output is a page of the output of the workspace's run with the id or
// task name idOrName: at most max bytes from offset, or the last max
// bytes when offset is negative. max is bounded by RunsOptions.MaxOutput
// (0: that much), and is at least one character's bytes.
func (r *Runs) Output(workspace, idOrName string, offset int64, maxBytes int) (OutputPage, error) {
	b, err := r.find(workspace, idOrName)
	if err != nil {
		return OutputPage{}, err
	}
	<-b.started
	if b.p == nil {
		return OutputPage{}, fmt.Errorf("%s: %w", idOrName, ErrNoRun)
	}
	if maxBytes <= 0 {
		maxBytes = r.o.MaxOutput
	}
	page := b.p.out.page(offset, min(max(maxBytes, utf8.UTFMax), r.o.MaxOutput))
	r.mu.Lock()
	page.Running = b.info.State == StateRunning
	r.mu.Unlock()
	return page, nil
}

// find is the workspace's run with the id or task name idOrName.
func (r *Runs) find(workspace, idOrName string) (*bgRun, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if b := r.runs[runKey{workspace, idOrName}]; b != nil {
		return b, nil
	}
	for k, b := range r.runs {
		if k.workspace == workspace && b.info.ID == idOrName {
			return b, nil
		}
	}
	return nil, fmt.Errorf("%s: %w", idOrName, ErrNoRun)
}

// newRunID is a run's id, and the marker of its processes: random, so
// that a process of another run, or of none, never carries it.
func newRunID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// runRecord is the file kept in RunsOptions.Dir while a run runs, so that
// the next launch can reap what a crashed CodeHydra left (reap.Record).
type runRecord struct {
	PID       int       `json:"pid"`
	Workspace string    `json:"workspace"`
	Task      string    `json:"task"`
	Started   time.Time `json:"started"`
	// BootID, StartTime and Marker (the run's id, in markerEnv) prove
	// which processes are the run's (see reap.Proof).
	BootID    string `json:"bootId"`
	StartTime uint64 `json:"startTime"`
	Marker    string `json:"marker"`
	// OwnerPID is the CodeHydra that started the run, and OwnerStartTime
	// when it started.
	OwnerPID       int    `json:"ownerPid"`
	OwnerStartTime uint64 `json:"ownerStartTime"`
}

// Proof is what the record proves about its run; the run's first
// process leads its group.
func (rec runRecord) Proof() reap.Proof {
	return reap.Proof{PID: rec.PID, PGID: rec.PID, BootID: rec.BootID, StartTime: rec.StartTime, Marker: rec.Marker,
		OwnerPID: rec.OwnerPID, OwnerStartTime: rec.OwnerStartTime,
		Log: []any{slog.String("workspace", rec.Workspace), slog.String("task", rec.Task)}}
}

// record writes the record of b. A run without one still runs: only a
// crash would leave it behind.
func (r *Runs) record(b *bgRun) {
	if r.o.Dir == "" {
		return
	}
	owner, boot, ownerStart := reap.Owner()
	start, _ := reap.StartTime(b.info.Pid)
	rec := runRecord{PID: b.info.Pid, Workspace: b.info.Workspace, Task: b.info.Name, Started: b.info.Started.UTC(),
		BootID: boot, StartTime: start, Marker: b.info.ID, OwnerPID: owner, OwnerStartTime: ownerStart}
	err := os.MkdirAll(r.o.Dir, 0o700)
	if err == nil {
		err = reap.WriteRecord(r.o.Dir, rec.PID, rec)
	}
	if err != nil {
		r.o.Logger.Warn("background task runs without a record; a crash would leave it running", slog.Any("err", err))
	}
}

// forget removes the record of b.
func (r *Runs) forget(b *bgRun) {
	if r.o.Dir == "" {
		return
	}
	if err := reap.RemoveRecord(r.o.Dir, b.p.Pid()); err != nil {
		r.o.Logger.Warn("remove a background task's record", slog.Any("err", err))
	}
}

// Reap ends what the runs of a crashed earlier CodeHydra left behind
// (their records in Dir) and removes their records. Call it at launch,
// before any run starts.
func (r *Runs) Reap() error {
	if r.o.Dir == "" {
		return nil
	}
	n, err := reap.Orphans[runRecord](reap.Reaper{Dir: r.o.Dir, Kind: "background task", MarkerEnv: markerEnv,
		StopTimeout: r.o.Grace, Log: r.o.Logger})
	if n > 0 {
		r.o.Logger.Info("reaped orphaned background tasks", slog.Int("count", n))
	}
	if err != nil {
		return fmt.Errorf("reap background tasks: %w", err)
	}
	return nil
}
