// Package procgroup runs a command as the leader of its own process group
// and ends the whole group with it, the way a container's other processes
// die with its init. It is the one home of that logic for the exec probe
// (package probe) and the process supervisor of `podgate run`
// (node/proc).
//
// The rule both rely on: a group is only safe to signal while its leader's
// pid cannot have been reused, that is before the leader is reaped. On
// Linux WaitExited waits for the exit without reaping (waitid WNOWAIT), so
// the group can be swept after a clean exit too; elsewhere the group is
// only killed while the leader still runs.
package procgroup

import (
	"os"
	"sync"
	"syscall"
	"time"
)

// Attr makes the child lead its own process group, so a signal meant for
// podgate (a Ctrl-C at the terminal) never reaches it directly and the
// group can be killed as one. With dieWithParent, on Linux the child also
// gets SIGKILL when the thread that forked it ends (PR_SET_PDEATHSIG);
// elsewhere that guard does not exist.
func Attr(dieWithParent bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	if dieWithParent {
		setDeathSignal(a)
	}
	return a
}

// TerminalAttr makes the child lead a session of its own with terminal,
// its standard input (fd 0), as its controlling terminal — what a
// container runtime gives a command run with a TTY (kubectl exec -t). A
// session leader leads its process group too, so the group can be killed
// as one as with Attr; dieWithParent as for Attr.
func TerminalAttr(dieWithParent bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if dieWithParent {
		setDeathSignal(a)
	}
	return a
}

// Kill sends sig to the process group pgid. ESRCH (nobody left) is the
// normal case after the group has gone and is not reported; pgid 0 and 1
// (which would name this process's own group or init) are ignored.
func Kill(pgid int, sig syscall.Signal) {
	if pgid > 1 {
		_ = syscall.Kill(-pgid, sig)
	}
}

// Pipes makes the stdout and stderr pipes of a child: the child gets the
// write ends, the caller reads the read ends itself so that waiting for
// the process never waits for a background process holding a pipe.
func Pipes() (outR, outW, errR, errW *os.File, err error) {
	outR, outW, err = os.Pipe()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	errR, errW, err = os.Pipe()
	if err != nil {
		CloseAll(outR, outW)
		return nil, nil, nil, nil, err
	}
	return outR, outW, errR, errW, nil
}

// FinishReading waits for readers (of pipes read until EOF) for at most
// grace, then closes the pipes to unblock them and waits again. Once the
// group is gone only a process that left it (setsid) can still hold a
// pipe, and its output is not worth waiting for.
func FinishReading(readers *sync.WaitGroup, grace time.Duration, pipes ...*os.File) {
	done := make(chan struct{})
	go func() { readers.Wait(); close(done) }()
	t := time.NewTimer(grace)
	select {
	case <-done:
	case <-t.C:
		CloseAll(pipes...) // unblocks the readers
		<-done
	}
	t.Stop()
	CloseAll(pipes...)
}

// CloseAll closes files, ignoring errors (they are pipe ends whose other
// side may be gone).
func CloseAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}
