package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
)

// ErrNetnsNotRestored means a thread that had switched into a namespace
// could not switch back. The thread is left locked to the calling
// goroutine, so Go ends it when that goroutine exits instead of handing
// it to other goroutines in the wrong namespace. A caller that runs Do or
// Start on a long-lived locked thread of its own (a spawner) must stop
// using that thread: it is still in the other namespace.
//
// Go never ends the main thread: if the goroutine was running there, Go
// parks the thread for good instead — harmless, but it stays a member of
// the namespace (keeping it alive) and /proc/PID/ns/net, which shows the
// main thread's namespace, names it from then on. A program that uses
// this package should lock its main goroutine to the main thread in an
// init function (runtime.LockOSThread), so that no Do runs there.
var ErrNetnsNotRestored = errors.New("the thread could not return to its network namespace")

// Netns is a network namespace held by an open file descriptor. The
// namespace lives while the descriptor is open or any process (or socket)
// is in it; nothing is mounted, so nothing outlives the processes.
type Netns struct {
	f     *os.File
	inode uint64
}

// StartInNewNetns starts cmd in a network namespace of its own, created
// for it (CLONE_NEWNET: the whole process, every thread, lives there).
// The namespace has only lo, down; the child configures it
// (SetupCluster). It goes when the child and its descendants are gone.
func StartInNewNetns(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if err := addCloneNewNet(cmd.SysProcAttr); err != nil {
		return fmt.Errorf("start %s in a new network namespace: %w", cmd.Path, err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s in a new network namespace: %w", cmd.Path, err)
	}
	return nil
}

// NetnsOf opens the network namespace of process pid (for example the
// cluster child started by StartInNewNetns, so the host side can Listen
// inside it). Holding it keeps the namespace alive after the process
// exits: Close it.
func NetnsOf(pid int) (*Netns, error) {
	return openNetns("/proc/" + strconv.Itoa(pid) + "/ns/net")
}

func openNetns(path string) (*Netns, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open network namespace: %w", err)
	}
	ino, err := inode(f)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("open network namespace: %w", err)
	}
	return &Netns{f: f, inode: ino}, nil
}

// newNetns creates an empty network namespace and returns it held by a
// descriptor, without moving any thread into it for longer than the
// creation: the locked thread unshares, opens its new namespace and
// switches back.
func newNetns() (*Netns, error) {
	runtime.LockOSThread()
	back, err := openThreadNetns()
	if err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("new network namespace: %w", err)
	}
	defer closeFd(back)
	if err := unshareNet(); err != nil {
		runtime.UnlockOSThread() // unshare failing leaves the thread as it was
		return nil, fmt.Errorf("new network namespace: %w", err)
	}
	ns, openErr := openNetns(threadNetns)
	if err := setns(back); err != nil {
		// Stay locked (see ErrNetnsNotRestored).
		if ns != nil {
			_ = ns.Close()
		}
		return nil, fmt.Errorf("new network namespace: %w: %w", ErrNetnsNotRestored, err)
	}
	runtime.UnlockOSThread()
	if openErr != nil {
		return nil, fmt.Errorf("new network namespace: %w", openErr)
	}
	return ns, nil
}

// Inode identifies the namespace (the number in /proc/PID/ns/net's
// net:[INODE]); two processes are in the same network namespace exactly
// when their inodes match.
func (n *Netns) Inode() uint64 { return n.inode }

// Close closes the descriptor. The namespace itself goes once no process
// and no socket is left in it.
func (n *Netns) Close() error {
	if err := n.f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("close network namespace: %w", err)
	}
	return nil
}

// Do runs fn on an OS thread that is inside the namespace, then moves
// the thread back to the namespace it was in. Whatever fn creates on its
// own goroutine (sockets, child processes) belongs to the namespace;
// goroutines fn starts run on other threads and do not. Do nests (the
// lock count of runtime.LockOSThread does), so it may run on a thread
// the caller already locked; if the way back fails, see
// ErrNetnsNotRestored.
func (n *Netns) Do(fn func() error) (err error) {
	runtime.LockOSThread()
	back, err := openThreadNetns()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("enter network namespace: %w", err)
	}
	defer closeFd(back)
	if err := n.withFd(setns); err != nil {
		runtime.UnlockOSThread() // a failed setns changes nothing
		return fmt.Errorf("enter network namespace net:[%d]: %w", n.inode, err)
	}
	// Deferred, so a panicking fn does not leave the thread behind either.
	defer func() {
		if rerr := setns(back); rerr != nil {
			err = errors.Join(err, fmt.Errorf("%w: %w", ErrNetnsNotRestored, rerr))
			return // stay locked
		}
		runtime.UnlockOSThread()
	}()
	return fn()
}

// withFd runs fn with the namespace's descriptor, which a concurrent
// Close cannot release (and the number be reused) until fn returns.
func (n *Netns) withFd(fn func(fd int) error) error {
	rc, err := n.f.SyscallConn()
	if err != nil {
		return err
	}
	var fnErr error
	if err := rc.Control(func(fd uintptr) { fnErr = fn(int(fd)) }); err != nil {
		return err
	}
	return fnErr
}

// Start starts cmd inside the namespace: the child is forked from a
// thread that is in it and inherits it. A parent-death signal in
// cmd.SysProcAttr (Pdeathsig) is bound to that thread, which goes back to
// Go's pool afterwards; a supervisor that needs the signal tied to a
// thread it controls calls Do(cmd.Start) from that thread instead.
func (n *Netns) Start(cmd *exec.Cmd) error {
	return n.Do(cmd.Start)
}

// Listen opens a listener inside the namespace, from a process that may
// live outside it: the socket stays in the namespace it was created in,
// whichever thread accepts on it. address should be an IP literal (a name
// would be resolved outside the namespace).
func (n *Netns) Listen(ctx context.Context, network, address string) (net.Listener, error) {
	var ln net.Listener
	err := n.Do(func() error {
		var err error
		ln, err = (&net.ListenConfig{}).Listen(ctx, network, address)
		return err
	})
	if err != nil {
		if ln != nil {
			_ = ln.Close()
		}
		return nil, fmt.Errorf("listen on %s in network namespace net:[%d]: %w", address, n.inode, err)
	}
	return ln, nil
}
