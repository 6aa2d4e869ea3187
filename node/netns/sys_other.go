//go:build !linux

package netns

import (
	"errors"
	"os"
	"syscall"
)

// errNotLinux: network namespaces are a Linux feature.
var errNotLinux = errors.New("pod networking needs Linux network namespaces")

const threadNetns = "/proc/thread-self/ns/net"

func openThreadNetns() (int, error) { return -1, errNotLinux }
func closeFd(int)                   {}
func setns(int) error               { return errNotLinux }
func unshareNet() error             { return errNotLinux }

func addCloneNewNet(*syscall.SysProcAttr) error { return errNotLinux }

func inode(*os.File) (uint64, error) { return 0, errNotLinux }

const (
	capNetAdmin = 12
	capSysAdmin = 21
)

func effectiveCaps(...int) ([]bool, error) { return nil, errNotLinux }
