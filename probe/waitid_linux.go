package probe

import (
	"os/exec"
	"syscall"
	"unsafe"
)

// waitExited blocks until cmd's process has exited. On Linux it does not
// reap it (waitid with WNOWAIT): while the zombie stays, its pid cannot be
// reused, so its process group can still be killed safely. reaped reports
// whether cmd.Wait has already been called (only when waitid failed).
func waitExited(cmd *exec.Cmd) (reaped bool, runErr error) {
	const pPID = 1     // idtype_t P_PID
	var info [128]byte // siginfo_t; contents unused
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(cmd.Process.Pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		switch errno {
		case 0:
			return false, nil
		case syscall.EINTR:
			continue
		default:
			return true, cmd.Wait()
		}
	}
}
