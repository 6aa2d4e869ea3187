package proc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/podgate/podgate/internal/procgroup"
)

// reaperEnv switches a binary into reaper mode (RunReaperIfAsked). The
// value is a fixed token so that an unrelated variable of the same name
// cannot trigger it by accident.
const (
	reaperEnv   = "PODGATE_INTERNAL_REAPER"
	reaperToken = "v1"
)

// reaperReady says this binary called RunReaperIfAsked, so that it can be
// re-executed as the guardian.
var reaperReady atomic.Bool

// ErrNoReaper is the guardian's start in a binary that does not call
// RunReaperIfAsked: re-executed, it would not become the guardian but run
// its main (a test binary, its tests) again.
var ErrNoReaper = errors.New("process guardian: this binary does not call proc.RunReaperIfAsked first thing in main (or TestMain), so it cannot run as its own guardian")

// RunReaperIfAsked turns the process into the guardian and exits when a
// Supervisor started it as one (the guardian is the supervising binary
// itself, re-executed, so that podgate needs no second program); else it
// returns at once and lets this process's Supervisors start their
// guardian. Every main, and every TestMain, of a binary that starts a
// Supervisor with the guardian calls it first thing, before it parses
// flags or does anything else that a guardian must not.
//
// It also runs the exec step of a process started with a Security (see
// there), which the supervising binary is re-executed for as well.
func RunReaperIfAsked() {
	runExecIfAsked()
	if os.Getenv(reaperEnv) == reaperToken {
		os.Exit(runReaper(os.Stdin))
	}
	reaperReady.Store(true)
}

// runReaper is the guardian process: it reads "+PGID" and "-PGID" lines
// from in and, at EOF (its parent is gone, or closed the pipe on purpose),
// SIGKILLs every group still registered.
func runReaper(in io.Reader) int {
	// Terminal signals are meant for podgate; the reaper's job starts when
	// podgate is gone, so it must outlive them.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	groups := map[int]bool{}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		line := sc.Text()
		if len(line) < 2 {
			continue
		}
		pgid, err := strconv.Atoi(line[1:])
		if err != nil || pgid <= 1 {
			continue
		}
		switch line[0] {
		case '+':
			groups[pgid] = true
		case '-':
			delete(groups, pgid)
		}
	}
	for pgid := range groups {
		procgroup.Kill(pgid, syscall.SIGKILL)
	}
	return 0
}

// reaper is podgate's end of the guardian process.
type reaper struct {
	mu   sync.Mutex
	cmd  *exec.Cmd
	w    io.WriteCloser
	done chan struct{}
}

// startReaper starts the guardian: this binary again, in reaper mode.
func startReaper() (*reaper, error) {
	if !reaperReady.Load() {
		return nil, ErrNoReaper
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("process guardian: find own executable: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("process guardian: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.Env = []string{reaperEnv + "=" + reaperToken}
	cmd.Stdin = r
	// Its own group: a Ctrl-C at the terminal must not take the guardian
	// down before podgate has finished stopping the pods.
	cmd.SysProcAttr = procgroup.Attr(false)
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("process guardian: start %s: %w", exe, err)
	}
	r.Close()
	rp := &reaper{cmd: cmd, w: w, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(rp.done)
	}()
	return rp, nil
}

// add registers a process group; remove forgets it. Write errors are
// ignored: a dead guardian only loses its guard, the parent-death signal
// still holds.
func (r *reaper) add(pgid int)    { r.send('+', pgid) }
func (r *reaper) remove(pgid int) { r.send('-', pgid) }

func (r *reaper) send(op byte, pgid int) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.w != nil {
		_, _ = fmt.Fprintf(r.w, "%c%d\n", op, pgid)
	}
}

// close ends the guardian (EOF: it kills what is still registered, which
// should be nothing) and waits for it.
func (r *reaper) close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	if r.w != nil {
		r.w.Close()
		r.w = nil
	}
	r.mu.Unlock()
	<-r.done
}
