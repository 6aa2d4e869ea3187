package proc

import "syscall"

// childAttr makes the child lead its own process group and die with its
// parent thread (see the package doc for why the thread matters).
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
