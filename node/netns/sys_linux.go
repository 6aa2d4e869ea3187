package netns

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// threadNetns names the calling thread's network namespace. A goroutine
// must be locked to its thread for the answer to mean anything.
const threadNetns = "/proc/thread-self/ns/net"

// openThreadNetns opens the calling thread's network namespace as a raw
// descriptor (close-on-exec: a child must not inherit it).
func openThreadNetns() (int, error) {
	fd, err := unix.Open(threadNetns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: threadNetns, Err: err}
	}
	return fd, nil
}

func closeFd(fd int) { _ = unix.Close(fd) }

// setns moves the calling thread into the network namespace fd.
func setns(fd int) error {
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("setns: %w", err)
	}
	return nil
}

// unshareNet moves the calling thread into a new, empty network
// namespace. Only the thread: the other threads of the process stay.
func unshareNet() error {
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("unshare(CLONE_NEWNET): %w", err)
	}
	return nil
}

// addCloneNewNet makes the child of cmd start in a new network namespace.
func addCloneNewNet(a *syscall.SysProcAttr) error {
	a.Cloneflags |= syscall.CLONE_NEWNET
	return nil
}

// inode of the namespace file f (what /proc/PID/ns/net's link shows as
// net:[INODE]).
func inode(f *os.File) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return 0, fmt.Errorf("stat %s: %w", f.Name(), err)
	}
	return st.Ino, nil
}

// Capabilities Preflight asks for (linux/capability.h).
const (
	capNetAdmin = unix.CAP_NET_ADMIN
	capSysAdmin = unix.CAP_SYS_ADMIN
)

// effectiveCaps reports whether the calling thread has each capability in
// its effective set.
func effectiveCaps(caps ...int) ([]bool, error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return nil, fmt.Errorf("capget: %w", err)
	}
	has := make([]bool, len(caps))
	for i, c := range caps {
		has[i] = data[c/32].Effective&(1<<(uint(c)%32)) != 0
	}
	return has, nil
}
