package procgroup

import (
	"os/exec"
	"syscall"
	"unsafe"
)

func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

// WaitExited blocks until cmd's process has exited without reaping it
// (waitid with WNOWAIT): while the zombie stays, its pid, which is also the
// process group id, cannot be reused, so the group can be killed safely
// before cmd.Wait. reaped reports whether cmd.Wait was called instead
// (waitid failed); err is then its error.
func WaitExited(cmd *exec.Cmd) (reaped bool, err error) {
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
