//go:build unix && !linux

package proc

import "syscall"

// childAttr makes the child lead its own process group. Without Linux's
// parent-death signal, the reaper alone guards against orphans.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
