//go:build unix && !linux

package probe

import "os/exec"

// waitExited reaps cmd: without Linux's waitid(WNOWAIT) there is no safe
// moment to sweep the process group after a clean exit (the pid could be
// reused), so Exec only kills the group when ctx ends.
func waitExited(cmd *exec.Cmd) (reaped bool, runErr error) {
	return true, cmd.Wait()
}
