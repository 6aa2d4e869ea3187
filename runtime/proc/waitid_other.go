//go:build unix && !linux

package proc

import "os/exec"

// waitExited reaps cmd: without waitid(WNOWAIT) there is no moment at
// which the group id is known not to be reused, so the group sweep after
// the leader's exit is skipped (see Process).
func waitExited(cmd *exec.Cmd) (reaped bool) {
	_ = cmd.Wait()
	return true
}
