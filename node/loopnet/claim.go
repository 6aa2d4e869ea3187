package loopnet

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
)

// RangeInUseError says another process holds a claim on the same range.
type RangeInUseError struct {
	CIDR netip.Prefix
	// Holder describes the process: "pid 42 (podgate)", or "another
	// process" where the kernel did not say.
	Holder string
}

func (e *RangeInUseError) Error() string {
	return fmt.Sprintf("pod range %s is in use by %s: two local nodes on one range hand out the same pod addresses", e.CIDR, e.Holder)
}

// ClaimRange marks cidr as this process's until the closer is closed or
// the process ends: an abstract Unix socket named after the range (the
// kernel frees it with the process, so a crash leaves nothing behind,
// and nothing is written to disk). A second claim of the same range, by
// any process of this network namespace, is a *RangeInUseError naming the
// holder. Ranges that overlap without being equal are not caught here:
// their pods' ports are (Owners.CheckPorts).
func ClaimRange(cidr netip.Prefix) (io.Closer, error) {
	name := "@podgate/loopback-pod-range/" + cidr.Masked().String()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: name, Net: "unix"})
	if err == nil {
		return ln, nil
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("claim pod range %s: %w", cidr, err)
	}
	return nil, &RangeInUseError{CIDR: cidr, Holder: holderOf(name)}
}

// holderOf asks the kernel who listens on the abstract socket name: the
// listener's credentials come with a connection (SO_PEERCRED), even one
// it never accepts.
func holderOf(name string) string {
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: name, Net: "unix"})
	if err != nil {
		return "another process"
	}
	defer c.Close()
	raw, err := c.SyscallConn()
	if err != nil {
		return "another process"
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil || credErr != nil || cred == nil || cred.Pid <= 0 {
		return "another process"
	}
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", cred.Pid))
	if err != nil {
		return fmt.Sprintf("pid %d", cred.Pid)
	}
	return fmt.Sprintf("pid %d (%s)", cred.Pid, strings.TrimSpace(string(comm)))
}
