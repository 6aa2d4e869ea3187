package proc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/podgate/podgate/internal/procgroup"
)

// pipeGrace bounds how long output is still read after a process group is
// gone: only a process that left the group (setsid) can hold the pipes
// then, and it must not hold up the container's exit.
const pipeGrace = 500 * time.Millisecond

// ErrClosed is returned by Start after Close.
var ErrClosed = errors.New("process supervisor is closed")

// ErrSpawnerStopped is returned by Start once a Spec.Enter left the
// spawner's thread in another network namespace: every child forked from
// it would start there, so it forks no more. The processes it started
// keep running until Close, which then ends the thread.
var ErrSpawnerStopped = errors.New("the process spawner stopped: its thread could not return to its network namespace")

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
	// Stdin, when set, is the process's standard input (the read end of a
	// pipe the caller writes, say); nil is the null device. The caller
	// keeps its own copy and closes it after Start.
	Stdin *os.File
	// TTY, when set, is a terminal (a pseudo-terminal's follower end)
	// that is the process's standard input, output and error and its
	// controlling terminal, in a session of its own (procgroup.
	// TerminalAttr); Stdin, Stdout and Stderr are then unused, the caller
	// reads and writes the terminal's other end. The caller closes its
	// copy after Start.
	TTY *os.File
	// Enter, when set, wraps the fork: the spawner calls it on its own
	// locked thread with a start function, and Enter calls that function
	// after moving the calling thread into the context the process
	// belongs in (a pod's network namespace), then moves the thread back.
	// The child inherits the forking thread's namespace, and its
	// parent-death signal stays tied to the spawner's thread. Should the
	// thread fail to come back, Enter must leave it locked and return an
	// error: the spawner then finds its thread in another namespace and
	// stops for good (ErrSpawnerStopped).
	Enter func(start func() error) error
	// Security, when it gives up anything, is applied between the fork
	// and the program (see Security); the binary must call
	// RunReaperIfAsked first thing in main.
	Security *Security
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
	enter func(start func() error) error
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
//
// A Spec.Enter moves this thread into another network namespace for one
// fork. Afterwards the loop checks that the thread is back where it
// started; if not, it answers every later request with ErrSpawnerStopped
// and, at Close, returns still locked so that Go ends the thread rather
// than hand it, in the wrong namespace, to other goroutines.
func (s *Supervisor) spawnLoop() {
	defer s.loop.Done()
	runtime.LockOSThread()
	home, homeErr := threadNetns()
	var stopped error // why the loop forks no more
	for req := range s.reqs {
		switch {
		case stopped != nil:
			req.reply <- stopped
		case req.enter == nil:
			req.reply <- req.cmd.Start()
		case homeErr != nil:
			req.reply <- fmt.Errorf("start in a namespace: cannot tell the spawner thread's own: %w", homeErr)
		default:
			err := req.enter(req.cmd.Start)
			if now, nerr := threadNetns(); nerr != nil || now != home {
				stopped = spawnerStopped(home, now, errors.Join(err, nerr))
				err = stopped
			}
			req.reply <- err
		}
	}
	if stopped == nil {
		// Unlocking before returning hands the thread back to the
		// scheduler instead of ending it (which would signal any child
		// still alive).
		runtime.UnlockOSThread()
	}
}

// spawnerStopped is ErrSpawnerStopped with where the thread is and why.
func spawnerStopped(home, now string, cause error) error {
	if cause == nil {
		return fmt.Errorf("%w (it is in %s, not %s)", ErrSpawnerStopped, now, home)
	}
	return fmt.Errorf("%w (it is in %s, not %s): %w", ErrSpawnerStopped, now, home, cause)
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
	cmd := spec.command(env, outW, errW)
	var statusR *os.File
	if !spec.Security.empty() {
		// The pipe's write end is cmd.ExtraFiles[0], closed once the
		// child holds its copy.
		if statusR, err = secureCmd(cmd, spec.Security); err != nil {
			procgroup.CloseAll(outR, outW, errR, errW)
			return nil, fmt.Errorf("start %s: %w", spec.Path, err)
		}
	}

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		procgroup.CloseAll(outR, outW, errR, errW)
		if statusR != nil {
			procgroup.CloseAll(statusR, cmd.ExtraFiles[0])
		}
		return nil, ErrClosed
	}
	// Registered under the lock so Close cannot miss a process that is
	// being started.
	p := &Process{s: s, cmd: cmd, done: make(chan struct{})}
	s.live[p] = struct{}{}
	s.procs.Add(1)
	reply := make(chan error, 1)
	s.reqs <- spawnReq{cmd: cmd, enter: spec.Enter, reply: reply}
	err = <-reply
	if statusR != nil {
		cmd.ExtraFiles[0].Close()
		if err == nil {
			// The exec step reports before the program runs.
			if err = readStatus(statusR); err != nil {
				err = fmt.Errorf("start %s: %w", spec.Path, err)
			}
		} else {
			statusR.Close()
		}
	}
	if err != nil && cmd.Process != nil {
		// Forked, but Enter failed on the way back: the start failed,
		// and nothing of it may run unsupervised.
		procgroup.Kill(cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}
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

// command is the command of spec, with its output to outW and errW (or
// to its terminal).
func (spec Spec) command(env []string, outW, errW *os.File) *exec.Cmd {
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
	if spec.Stdin != nil {
		cmd.Stdin = spec.Stdin
	}
	if spec.TTY != nil {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = spec.TTY, spec.TTY, spec.TTY
		cmd.SysProcAttr = procgroup.TerminalAttr(true)
	}
	return cmd
}

// secureCmd turns cmd into the exec step of sec (see Security): this
// binary, told the program and sec, with a pipe at statusFD to report a
// failure on.
func secureCmd(cmd *exec.Cmd, sec *Security) (*os.File, error) {
	if !reaperReady.Load() {
		return nil, errors.New("a securityContext needs this binary to call proc.RunReaperIfAsked first thing in main (or TestMain)")
	}
	plan, err := json.Marshal(planOf(cmd.Path, sec))
	if err != nil {
		return nil, err
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	// This very binary, even if its file was replaced or removed since it
	// started (the child resolves the link as its own, before its exec).
	cmd.Path = "/proc/self/exe"
	cmd.Env = append(append([]string{}, cmd.Env...), execEnv+"="+string(plan))
	cmd.ExtraFiles = []*os.File{statusW}
	return statusR, nil
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
