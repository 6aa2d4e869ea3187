//go:build !linux

package proc

import "errors"

func applyAndExec(execPlan, []string, []string) error {
	return errors.New("a container's securityContext is applied on Linux only")
}
