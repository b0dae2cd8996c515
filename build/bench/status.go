package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"codehydra/workspace"
	"codehydra/workspace/statuscache"
)

// statusResult is workspace status on one repository size.
type statusResult struct {
	Files, Dirs int
	// Bare is `git status` alone; Uncached is Manager.Status without Run
	// (every call asks git).
	Bare, Uncached time.Duration
	// Cold is the first call after Run starts (watch setup and the first
	// git status); WarmP50/WarmP99 are calls on a fresh cache entry.
	Cold, WarmP50, WarmP99 time.Duration
	WarmCalls              int
	// Watches is the number of inotify watches the cache holds.
	Watches int
}

// changeResult is how long a change takes to show in a warm cache.
type changeResult struct {
	Files        int
	Dirty, Clean time.Duration
}

// createResult is Manager.Create/Delete against bare git.
type createResult struct {
	Files              int
	BareAdd, Create    time.Duration
	BareRemove, Delete time.Duration
}

func newManager(projects []string, root string) *workspace.Manager {
	return workspace.NewManager(workspace.Options{
		Projects:     projects,
		WorktreeRoot: root,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
}

// runManager runs m.Run and a status cache over m, as serve does, until
// the returned stop is called; it returns m in front of the cache, whose
// Status answers from it already.
func runManager(m *workspace.Manager) (cached statuscache.Workspaces, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	c := statuscache.New(m, statuscache.Options{})
	waitCache := c.Start(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx)
	}()
	return statuscache.Over(m, c), func() {
		cancel()
		<-done
		waitCache()
	}
}

func (b *bench) benchStatus() error {
	ctx := b.ctx
	for _, n := range b.opts.sizes {
		r, err := b.ensureRepo(n)
		if err != nil {
			return err
		}
		res := statusResult{Files: n, Dirs: r.Dirs}
		// A first run refreshes the index (file times) after the reset.
		if _, err := gitOut(ctx, "-C", r.Workspace, "status", "--porcelain"); err != nil {
			return err
		}
		bare, err := timeIt(5, func() error {
			_, err := gitOut(ctx, "-C", r.Workspace, "status", "--porcelain=v1", "-z", "--untracked-files=normal")
			return err
		})
		if err != nil {
			return err
		}
		res.Bare = median(bare)

		m := newManager([]string{r.Main}, filepath.Join(b.tmp, "worktrees"))
		if err := m.Load(ctx); err != nil {
			return err
		}
		uncached, err := timeIt(5, func() error {
			_, err := m.Status(ctx, r.Workspace)
			return err
		})
		if err != nil {
			return err
		}
		res.Uncached = median(uncached)

		if res.Cold, err = b.measureCold(r); err != nil {
			return err
		}
		m = newManager([]string{r.Main}, filepath.Join(b.tmp, "worktrees"))
		if err := m.Load(ctx); err != nil {
			return err
		}
		cached, stop := runManager(m)
		err = b.measureWarm(cached, r, &res)
		var ch changeResult
		if err == nil {
			ch, err = b.measureChanges(cached, r)
		}
		stop()
		if err != nil {
			return err
		}
		b.status = append(b.status, res)
		b.changes = append(b.changes, ch)
		b.say("status on %d files: bare %s, cold %s, warm p50 %s", n, ms(res.Bare), ms(res.Cold), ms(res.WarmP50))
	}
	return nil
}

// measureCold times the first Status call right after Run starts (it
// joins the background warm-up), from Run's start, with a new manager
// each time: the median of three.
func (b *bench) measureCold(r benchRepo) (time.Duration, error) {
	var colds []time.Duration
	for range 3 {
		m := newManager([]string{r.Main}, filepath.Join(b.tmp, "worktrees"))
		if err := m.Load(b.ctx); err != nil {
			return 0, err
		}
		t0 := time.Now()
		cached, stop := runManager(m)
		_, err := cached.Status(b.ctx, r.Workspace)
		colds = append(colds, time.Since(t0))
		stop()
		if err != nil {
			return 0, err
		}
	}
	return median(colds), nil
}

// measureWarm times Status calls on a warm cache entry of m, which runs,
// and counts the cache's inotify watches, into res.
func (b *bench) measureWarm(m statuscache.Workspaces, r benchRepo, res *statusResult) error {
	if _, err := m.Status(b.ctx, r.Workspace); err != nil {
		return err
	}
	res.Watches = inotifyWatches()
	calls := 20_000
	if b.opts.quick {
		calls = 2_000
	}
	warm, err := timeIt(calls, func() error {
		_, err := m.Status(b.ctx, r.Workspace)
		return err
	})
	if err != nil {
		return err
	}
	res.WarmP50, res.WarmP99, res.WarmCalls = percentile(warm, 50), percentile(warm, 99), calls
	return nil
}

// measureChanges times how long a change takes to show in a warm cache
// (written by another process's view: a file appears, then goes).
func (b *bench) measureChanges(m statuscache.Workspaces, r benchRepo) (changeResult, error) {
	ctx := b.ctx
	res := changeResult{Files: r.Files}
	waitFor := func(want bool) (time.Duration, error) {
		t0 := time.Now()
		for time.Since(t0) < 10*time.Second {
			st, err := m.Status(ctx, r.Workspace)
			if err != nil {
				return 0, err
			}
			if st.IsDirty == want {
				return time.Since(t0), nil
			}
			time.Sleep(time.Millisecond)
		}
		return 0, fmt.Errorf("status of %s did not become dirty=%v within 10 s", r.Workspace, want)
	}
	var dirty, clean []time.Duration
	f := filepath.Join(r.Workspace, "src", "m000", "p000", "bench-new.txt")
	for range 3 {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			return res, err
		}
		d, err := waitFor(true)
		if err != nil {
			return res, err
		}
		dirty = append(dirty, d)
		if err := os.Remove(f); err != nil {
			return res, err
		}
		d, err = waitFor(false)
		if err != nil {
			return res, err
		}
		clean = append(clean, d)
	}
	res.Dirty, res.Clean = median(dirty), median(clean)

	return res, nil
}

// inotifyWatches counts this process's inotify watches (0 where /proc
// does not tell).
func inotifyWatches() int {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	n := 0
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err != nil || !strings.Contains(target, "inotify") {
			continue
		}
		info, err := os.ReadFile(filepath.Join("/proc/self/fdinfo", fd.Name()))
		if err != nil {
			continue
		}
		n += strings.Count(string(info), "inotify wd:")
	}
	return n
}

func (b *bench) benchCreateDelete() error {
	ctx := b.ctx
	sizes := []int{1_000, 20_000}
	if b.opts.quick {
		sizes = []int{1_000}
	}
	for _, n := range sizes {
		r, err := b.ensureRepo(n)
		if err != nil {
			return err
		}
		root := filepath.Join(b.tmp, fmt.Sprintf("create-%d", n))
		if err := os.MkdirAll(root, 0o755); err != nil {
			return err
		}
		res := createResult{Files: n}
		const rounds = 5
		var adds, removes []time.Duration
		for i := range rounds {
			branch := fmt.Sprintf("bare-%d", i)
			path := filepath.Join(root, branch)
			// Each side starts with nothing left to write back, so
			// neither pays for the other's files.
			syscall.Sync()
			t0 := time.Now()
			if _, err := gitOut(ctx, "-C", r.Main, "worktree", "add", "-q", "-b", branch, path, "main"); err != nil {
				return err
			}
			adds = append(adds, time.Since(t0))
			syscall.Sync()
			t0 = time.Now()
			if _, err := gitOut(ctx, "-C", r.Main, "worktree", "remove", path); err != nil {
				return err
			}
			if _, err := gitOut(ctx, "-C", r.Main, "branch", "-D", "-q", branch); err != nil {
				return err
			}
			removes = append(removes, time.Since(t0))
		}
		res.BareAdd, res.BareRemove = median(adds), median(removes)

		m := newManager([]string{r.Main}, root)
		if err := m.Load(ctx); err != nil {
			return err
		}
		var creates, deletes []time.Duration
		for i := range rounds {
			syscall.Sync()
			t0 := time.Now()
			ws, err := m.Create(ctx, workspace.CreateOptions{ProjectPath: r.Main, Name: fmt.Sprintf("app-%d", i), Base: "main"})
			if err != nil {
				return err
			}
			creates = append(creates, time.Since(t0))
			syscall.Sync()
			t0 = time.Now()
			if err := m.Delete(ctx, ws.Path, workspace.DeleteOptions{}); err != nil {
				return err
			}
			deletes = append(deletes, time.Since(t0))
		}
		res.Create, res.Delete = median(creates), median(deletes)
		b.creates = append(b.creates, res)
		b.say("create on %d files: bare %s, codehydra %s; delete: bare %s, codehydra %s", n, ms(res.BareAdd), ms(res.Create), ms(res.BareRemove), ms(res.Delete))
	}
	return nil
}
