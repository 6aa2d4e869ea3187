package proc

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"sync"
	"time"

	"github.com/podgate/podgate/procgroup"
)

// pipeGrace bounds how long output is still read after a process group is
// gone: only a process that left the group (setsid) can hold the pipes
// then, and it must not hold up the container's exit.
const pipeGrace = 500 * time.Millisecond

// ErrClosed is returned by Start after Close.
var ErrClosed = errors.New("process supervisor is closed")

// Spec describes one process to start.
type Spec struct {
	// Path is the executable; Args is the full argv (Args[0] included).
	Path string
	Args []string
	// Env is the whole environment (nothing is inherited).
	Env []string
	// Dir is the working directory; empty means podgate's own.
	Dir string
	// Stdout and Stderr receive the process's output as it is read; nil
	// discards it. Each is written from one goroutine of its own.
	Stdout, Stderr io.Writer
}

// Supervisor starts processes and makes sure none outlives it (or
// podgate). Create it with NewSupervisor and end it with Close.
type Supervisor struct {
	reaper *reaper
	reqs   chan spawnReq
	loop   sync.WaitGroup // the spawner goroutine
	procs  sync.WaitGroup // one per live Process

	mu     sync.Mutex
	live   map[*Process]struct{}
	closed bool
}

type spawnReq struct {
	cmd   *exec.Cmd
	reply chan error
}

// Options configure a Supervisor.
type Options struct {
	// NoGuardian skips the guardian process; children then rely on the
	// parent-death signal alone (their own children may survive podgate).
	NoGuardian bool
}

// NewSupervisor starts the spawner thread and the guardian process.
func NewSupervisor(opts Options) (*Supervisor, error) {
	s := &Supervisor{reqs: make(chan spawnReq), live: map[*Process]struct{}{}}
	if !opts.NoGuardian {
		r, err := startReaper()
		if err != nil {
			return nil, err
		}
		s.reaper = r
	}
	s.loop.Add(1)
	go s.spawnLoop()
	return s, nil
}

// spawnLoop forks every child from one OS thread that lives as long as the
// Supervisor: PR_SET_PDEATHSIG fires when the forking *thread* exits, and
// the Go runtime ends a thread whenever a goroutine exits while locked to
// it — any goroutine's, not only ours.
func (s *Supervisor) spawnLoop() {
	defer s.loop.Done()
	runtime.LockOSThread()
	// Unlocking before returning hands the thread back to the scheduler
	// instead of ending it (which would signal any child still alive).
	defer runtime.UnlockOSThread()
	for req := range s.reqs {
		req.reply <- req.cmd.Start()
	}
}

// Start starts a process in its own process group. The returned Process
// reports its exit on Done.
func (s *Supervisor) Start(spec Spec) (*Process, error) {
	if len(spec.Args) == 0 {
		spec.Args = []string{spec.Path}
	}
	outR, outW, errR, errW, err := procgroup.Pipes()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.Path, err)
	}
	env := spec.Env
	if env == nil {
		env = []string{} // never inherit podgate's environment
	}
	cmd := &exec.Cmd{
		Path:   spec.Path,
		Args:   spec.Args,
		Env:    env,
		Dir:    spec.Dir,
		Stdout: outW,
		Stderr: errW,
		// Dies with the forking thread (see the package doc).
		SysProcAttr: procgroup.Attr(true),
	}

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		procgroup.CloseAll(outR, outW, errR, errW)
		return nil, ErrClosed
	}
	// Registered under the lock so Close cannot miss a process that is
	// being started.
	p := &Process{s: s, cmd: cmd, done: make(chan struct{})}
	s.live[p] = struct{}{}
	s.procs.Add(1)
	reply := make(chan error, 1)
	s.reqs <- spawnReq{cmd: cmd, reply: reply}
	err = <-reply
	if err == nil {
		p.Pid = cmd.Process.Pid
		s.reaper.add(p.Pid)
	} else {
		delete(s.live, p)
		s.procs.Done()
	}
	s.mu.Unlock()
	procgroup.CloseAll(outW, errW) // the child holds its own copies
	if err != nil {
		procgroup.CloseAll(outR, errR)
		return nil, err
	}
	go p.supervise(outR, errR, spec.Stdout, spec.Stderr)
	return p, nil
}

// Close kills every process still running (SIGKILL to each group), waits
// for them, and stops the spawner and the guardian. Callers stop their
// processes gracefully first; Close is the backstop.
func (s *Supervisor) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	for p := range s.live {
		p.Kill()
	}
	close(s.reqs)
	s.mu.Unlock()
	s.procs.Wait()
	s.loop.Wait()
	s.reaper.close()
}

// Live is how many started processes have not been reaped yet.
func (s *Supervisor) Live() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.live)
}

func (s *Supervisor) forget(p *Process) {
	s.mu.Lock()
	delete(s.live, p)
	s.mu.Unlock()
	s.procs.Done()
}
