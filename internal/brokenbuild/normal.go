//go:build !podgate_broken

package brokenbuild

// Has reports whether the build carries fault: never, in a normal build.
func Has(string) bool { return false }
