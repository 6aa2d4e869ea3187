package node

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// pty is a pseudo-terminal: the leader end the node reads and writes, the
// follower end the command gets as its terminal.
type pty struct {
	leader, follower *os.File
}

// openPTY opens a new pseudo-terminal through /dev/ptmx, as openpty(3)
// does: unlock the follower, find its number, open it — without cgo.
func openPTY() (*pty, error) {
	// Non-blocking, so that Go's poller reads it and Close ends a read
	// under way (a process left in the background may hold the terminal
	// open).
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("open /dev/ptmx: %w", err)
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("unlock the terminal: %w", err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("terminal number: %w", err)
	}
	leader := os.NewFile(uintptr(fd), "/dev/ptmx")
	name := "/dev/pts/" + strconv.FormatUint(uint64(n), 10)
	follower, err := os.OpenFile(name, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		leader.Close()
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	return &pty{leader: leader, follower: follower}, nil
}

// resize sets the terminal's size (its processes get SIGWINCH). Through
// SyscallConn: Fd would turn the leader blocking.
func (p *pty) resize(width, height uint16) error {
	rc, err := p.leader.SyscallConn()
	if err != nil {
		return err
	}
	var ioErr error
	if err := rc.Control(func(fd uintptr) {
		ioErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Col: width, Row: height})
	}); err != nil {
		return err
	}
	return ioErr
}
