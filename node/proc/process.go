package proc

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/podgate/podgate/internal/procgroup"
)

// Exit is how a process ended.
type Exit struct {
	// Code is the exit status, or 128+signal when a signal ended it (what
	// a container runtime reports: 137 for SIGKILL, 143 for SIGTERM).
	Code int
	// Signal is the signal that ended the process, 0 if it exited.
	Signal syscall.Signal
	// At is when the exit was observed (wall clock).
	At time.Time
}

// Process is a started process group. Pid is the leader's pid, which is
// also the group id.
type Process struct {
	Pid int

	s    *Supervisor
	cmd  *exec.Cmd
	done chan struct{}
	exit Exit

	mu     sync.Mutex
	exited bool // the leader has exited: signals must not go to its pid any more
}

// Done is closed once the leader has exited, the rest of its group has
// been killed, the leader has been reaped and its output read.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exit reports how the leader ended; valid once Done is closed.
func (p *Process) Exit() Exit {
	<-p.done
	return p.exit
}

// Signal sends sig to the leader only, as a container runtime signals a
// container's init. It does nothing once the leader has exited.
func (p *Process) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited {
		return nil
	}
	err := syscall.Kill(p.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// Kill sends SIGKILL to the whole group. It does nothing once the group
// has been swept.
func (p *Process) Kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.exited {
		procgroup.Kill(p.Pid, syscall.SIGKILL)
	}
}

// supervise waits for the leader, sweeps its group, reaps it and drains
// its output.
func (p *Process) supervise(outR, errR *os.File, stdout, stderr io.Writer) {
	defer p.s.forget(p)
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); copyOut(stdout, outR) }()
	go func() { defer readers.Done(); copyOut(stderr, errR) }()

	reaped, _ := procgroup.WaitExited(p.cmd)
	p.mu.Lock()
	if !reaped {
		// The leader is a zombie: its pid, the group id, cannot have been
		// reused, so sweeping the group is safe. The container's other
		// processes die with its init.
		procgroup.Kill(p.Pid, syscall.SIGKILL)
	}
	p.exited = true
	p.mu.Unlock()
	// Forget the group before reaping frees its id for reuse, so the
	// guardian can never kill a stranger's group.
	p.s.reaper.remove(p.Pid)
	if !reaped {
		_ = p.cmd.Wait()
	}
	p.exit = exitOf(p.cmd.ProcessState)

	procgroup.FinishReading(&readers, pipeGrace, outR, errR)
	close(p.done)
}

func exitOf(st *os.ProcessState) Exit {
	e := Exit{At: time.Now(), Code: -1}
	if st == nil {
		return e
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		e.Signal = ws.Signal()
		e.Code = 128 + int(e.Signal)
		return e
	}
	e.Code = st.ExitCode()
	return e
}

func copyOut(w io.Writer, r *os.File) {
	if w == nil {
		w = io.Discard
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			_, _ = w.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}
