//go:build !linux

package proc

// threadNetns: without network namespaces there is one, and no Enter can
// leave it.
func threadNetns() (string, error) { return "", nil }
