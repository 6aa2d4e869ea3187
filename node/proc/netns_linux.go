package proc

import "os"

// threadNetns names the calling thread's network namespace ("net:[N]").
// The goroutine must be locked to its thread for it to mean anything.
func threadNetns() (string, error) { return os.Readlink("/proc/thread-self/ns/net") }
