//go:build unix && !linux

package procgroup

import (
	"os/exec"
	"syscall"
)

// Without Linux's parent-death signal, callers' other guards alone protect
// against orphans.
func setDeathSignal(*syscall.SysProcAttr) {}

// WaitExited reaps cmd: without waitid(WNOWAIT) there is no moment at
// which the group id is known not to be reused, so the group sweep after
// the leader's exit is skipped (reaped is always true).
func WaitExited(cmd *exec.Cmd) (reaped bool, err error) {
	return true, cmd.Wait()
}
