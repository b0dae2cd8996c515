package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// machineInfo is the machine the figures come from.
type machineInfo struct {
	CPU, Kernel, Git, Go, RAM string
	Cores                     int
	Date                      time.Time
	WatchLimit                string
	// Load is the load average (1 min) when the bench started: other work
	// on the machine skews the figures.
	Load string
}

func readMachine(ctx context.Context) machineInfo {
	m := machineInfo{
		CPU:   "unknown",
		Cores: runtime.NumCPU(),
		Go:    runtimeInfo(),
		Date:  time.Now().UTC(),
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
				m.RAM = strconv.FormatFloat(kb/1024/1024, 'f', 1, 64) + " GiB"
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = runtime.GOOS + " " + strings.TrimSpace(string(b))
	} else {
		m.Kernel = runtime.GOOS
	}
	if out, err := exec.CommandContext(ctx, "git", "--version").Output(); err == nil {
		m.Git = strings.TrimPrefix(strings.TrimSpace(string(out)), "git version ")
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			m.Load = f[0]
		}
	}
	if b, err := os.ReadFile("/proc/sys/fs/inotify/max_user_watches"); err == nil {
		m.WatchLimit = strings.TrimSpace(string(b))
	}
	return m
}
