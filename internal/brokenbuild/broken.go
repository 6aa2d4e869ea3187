//go:build podgate_broken

package brokenbuild

import (
	"slices"
	"strings"
)

// faults is set by the linker (-X): the comma-separated faults.
var faults string

// Has reports whether the build carries fault.
func Has(fault string) bool { return slices.Contains(strings.Split(faults, ","), fault) }
