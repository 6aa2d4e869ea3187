package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is a process the benchmark started.
type proc struct {
	name   string
	pid    int
	cmd    *exec.Cmd
	log    string
	cgroup string // its cgroup directory, removed after it exits
	done   chan struct{}
	err    error
}

// start runs prog with args (env nil: this process's), its output in a log
// file, placed as pl says: limited starts it in a new cgroup with
// -cpu-limit cores, ownCore on the proxy's CPU alone.
func (b *bench) start(name string, pl placement, env []string, prog string, args ...string) (*proc, error) {
	p := &proc{name: name, log: b.logPath(name), done: make(chan struct{})}
	switch pl {
	case limited:
		dir, err := newLimitedCgroup(name, b.o.cpuLimit)
		if err != nil {
			return nil, err
		}
		p.cgroup = dir
		args = append([]string{roleCgroup, dir, prog}, args...)
		prog = b.self
	case ownCore:
		args = append([]string{roleCPU, strconv.Itoa(b.proxyCPU), prog}, args...)
		prog = b.self
	}
	log, err := os.Create(p.log)
	if err != nil {
		p.removeCgroup()
		return nil, err
	}
	p.cmd = exec.Command(prog, args...)
	p.cmd.Env, p.cmd.Stdout, p.cmd.Stderr = env, log, log
	if err := p.cmd.Start(); err != nil {
		log.Close()
		p.removeCgroup()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p.pid = p.cmd.Process.Pid
	go func() {
		p.err = p.cmd.Wait()
		log.Close()
		p.removeCgroup()
		close(p.done)
	}()
	return p, nil
}

// waitOK waits until url answers 200, or the process exits.
func (p *proc) waitOK(ctx context.Context, url string) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(startWait)
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%w: %s", errNoAnswer, resp.Status)
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited (%v) before %s answered; log %s", p.name, p.err, url, p.log)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s did not answer 200 within %s (%v); log %s", p.name, url, startWait, err, p.log)
		}
	}
}

// stop ends the process with SIGTERM, SIGKILL after 10 s.
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// clockTick is USER_HZ, the unit of /proc/PID/stat's times: 100 on every
// Linux architecture Go runs on.
const clockTick = 10 * time.Millisecond

// cpu is the process's CPU time so far, all its threads: the sum of its
// threads' run time in nanoseconds (/proc/PID/task/TID/schedstat), or,
// where the kernel keeps no schedstat, user + system time in ticks of
// 10 ms from /proc/PID/stat (too coarse for short runs). Go's threads
// live as long as the process, so the sum loses nothing to threads gone.
func (p *proc) cpu() time.Duration {
	if d, ok := schedstatCPU(p.pid); ok {
		return d
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid))
	if err != nil {
		return 0
	}
	// Fields after the command name's closing parenthesis start at
	// field 3 (state); utime and stime are fields 14 and 15.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	user, _ := strconv.ParseInt(f[11], 10, 64)
	sys, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(user+sys) * clockTick
}

func schedstatCPU(pid int) (time.Duration, bool) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return 0, false
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // the thread ended in between
			}
			return 0, false
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, false
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, false
		}
		sum += time.Duration(ns)
	}
	return sum, true
}

// rss is the process's resident set (VmRSS) in bytes.
func (p *proc) rss() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1000
		}
	}
	return 0
}

func (p *proc) removeCgroup() {
	if p.cgroup != "" {
		_ = os.Remove(p.cgroup)
	}
}

// cfsPeriodMicros is the CFS period a Kubernetes CPU limit uses (the
// kubelet's default cpuCFSQuotaPeriod, 100 ms).
const cfsPeriodMicros = 100000

func quotaMicros(cores float64) int { return int(cores * cfsPeriodMicros) }

// cpuControllerDir is where new cgroups with a CPU limit go: cgroup v2's
// root when it has the cpu controller, else cgroup v1's cpu hierarchy.
func cpuControllerDir() (dir string, v2 bool, err error) {
	if b, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers"); err == nil && strings.Contains(" "+string(b)+" ", " cpu ") {
		return "/sys/fs/cgroup", true, nil
	}
	if _, err := os.Stat("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"); err == nil {
		return "/sys/fs/cgroup/cpu", false, nil
	}
	return "", false, errors.New("no cgroup with the cpu controller (cgroup v2's cpu, or v1's /sys/fs/cgroup/cpu)")
}

// cgroupUsable checks that a limited cgroup can be made (root, a cpu
// controller) before the throttled runs start.
func (b *bench) cgroupUsable() error {
	dir, err := newLimitedCgroup("check", b.o.cpuLimit)
	if err != nil {
		return err
	}
	return os.Remove(dir)
}

// newLimitedCgroup makes a cgroup whose tasks get cores of CPU per
// period, as the kubelet writes a container's CPU limit.
func newLimitedCgroup(name string, cores float64) (string, error) {
	root, v2, err := cpuControllerDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, fmt.Sprintf("queuebench-%d-%s", os.Getpid(), name))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("making a cgroup: %w", err)
	}
	write := func(file, v string) error {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(v), 0o644); err != nil {
			_ = os.Remove(dir)
			return fmt.Errorf("cgroup %s: %w", file, err)
		}
		return nil
	}
	if v2 {
		return dir, write("cpu.max", fmt.Sprintf("%d %d", quotaMicros(cores), cfsPeriodMicros))
	}
	if err := write("cpu.cfs_period_us", strconv.Itoa(cfsPeriodMicros)); err != nil {
		return "", err
	}
	return dir, write("cpu.cfs_quota_us", strconv.Itoa(quotaMicros(cores)))
}
