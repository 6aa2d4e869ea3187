package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// placement is where the proxy runs during a series of runs, and so what
// its throughput measures.
type placement int

const (
	// sharedCores: every process (wrk, the upstream, the proxy) on every
	// core, as the scheduler likes. Throughput is what the machine does
	// in all, so the load generator's and the upstream's CPU dilute the
	// proxy's share of it.
	sharedCores placement = iota
	// ownCore: the proxy alone on one CPU, wrk and the upstream on the
	// others, as a sidecar with a core of its own. The proxy is the
	// bottleneck, so throughput is what the proxy itself sustains.
	ownCore
	// limited: the proxy in a cgroup with -cpu-limit of a core (a CFS
	// quota), a Kubernetes CPU limit.
	limited
	numPlacements
)

// describe says what p is, for the section headings and the table.
func (b *bench) describe(p placement) string {
	switch p {
	case ownCore:
		return fmt.Sprintf("the proxy on a core of its own (CPU %d; wrk and the upstream on CPU %s)", b.proxyCPU, cpuList(b.otherCPUs))
	case limited:
		return fmt.Sprintf("the proxy limited to %.2f core (CFS quota %d µs per %d µs)", b.o.cpuLimit, quotaMicros(b.o.cpuLimit), cfsPeriodMicros)
	}
	return "every process on every core"
}

// splitCPUs picks the proxy's CPU for the ownCore runs: the last one this
// process may run on; the others are for wrk and the upstream.
func splitCPUs() (proxy int, others unix.CPUSet, err error) {
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		return 0, others, fmt.Errorf("reading the CPUs this process may use: %w", err)
	}
	if all.Count() < 2 {
		return 0, others, errors.New("a core of its own for the proxy needs at least 2 CPUs (pass -own-core=false)")
	}
	proxy = -1
	for cpu := range 1024 {
		if all.IsSet(cpu) {
			if proxy >= 0 {
				others.Set(proxy)
			}
			proxy = cpu
		}
	}
	return proxy, others, nil
}

func cpuList(set unix.CPUSet) string {
	s := ""
	for cpu := range 1024 {
		if set.IsSet(cpu) {
			if s != "" {
				s += ","
			}
			s += strconv.Itoa(cpu)
		}
	}
	return s
}

// pin sets the CPUs every thread of process pid may run on; threads it
// starts later inherit them from the thread that starts them.
func pin(pid int, set unix.CPUSet) error {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("pinning thread %d of %d: %w", tid, pid, err)
		}
	}
	return nil
}

// pinBench moves this process (and so the wrk it starts) and the upstream
// onto set; it returns the function that gives them every CPU back.
func (b *bench) pinBench(set unix.CPUSet) (restore func(), err error) {
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		return nil, err
	}
	restore = func() {
		_ = pin(os.Getpid(), all)
		_ = pin(b.upstream.pid, all)
	}
	if err := pin(os.Getpid(), set); err != nil {
		return nil, err
	}
	if err := pin(b.upstream.pid, set); err != nil {
		restore()
		return nil, err
	}
	return restore, nil
}

// execOnCPU pins this process to CPU N, then becomes PROGRAM: a Go program
// sizes GOMAXPROCS from the CPUs it may run on, so the proxy starts as it
// would with one core.
func execOnCPU(args []string) error {
	if len(args) < 2 {
		return errors.New("want CPU PROGRAM [ARGS…]")
	}
	cpu, err := strconv.Atoi(args[0])
	if err != nil {
		return fmt.Errorf("CPU %q: %w", args[0], err)
	}
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pinning to CPU %d: %w", cpu, err)
	}
	return execProgram(args[1:])
}
