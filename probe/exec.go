package probe

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// MaxExecOutput is how much of an exec probe's output (stdout, then stderr)
// becomes its message: exactly 10240 bytes, as the kubelet.
const MaxExecOutput = 10240

// execProbe runs the command without a shell. Exit 0 passes; any other exit
// fails with the output as message; running past the timeout fails with the
// kubelet's timeout text. A command that cannot start is a probe error.
//
// Unlike the kubelet, the command is killed (its whole process group, with
// HostExecutor) when the worker stops, not left running.
func (r *Runner) execProbe(ctx context.Context, e *corev1.ExecAction, t Target, timeout time.Duration) (Result, string, error) {
	argv := expandCommand(e.Command, t.Env)
	ex := t.Exec
	if ex == nil {
		ex = r.exec
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, code, err := ex.Exec(actx, argv)
	if err != nil && actx.Err() != nil {
		if ctx.Err() != nil {
			return Error, "", ctx.Err() // the worker stopped
		}
		return Failure, fmt.Sprintf("command timed out: %q timed out after %v", strings.Join(argv, " "), timeout), nil
	}
	if err != nil {
		return Error, "", err
	}
	if len(out) > MaxExecOutput {
		out = out[:MaxExecOutput]
	}
	if code != 0 {
		return Failure, string(out), nil
	}
	return Success, string(out), nil
}
