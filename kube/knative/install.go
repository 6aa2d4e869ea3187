package knative

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"
)

// DefaultStepTimeout bounds the wait after one Step's apply.
const DefaultStepTimeout = 5 * time.Minute

// Kubectl is the cluster's kubectl with an admin's kubeconfig.
type Kubectl struct {
	Path, Kubeconfig string
	// Timeout bounds each Step's wait (default DefaultStepTimeout).
	Timeout time.Duration
	// Progress, when set, gets a line per apply and wait.
	Progress io.Writer
}

// Install applies steps in order, each with `kubectl apply -k` and then
// waiting for its Wait list, before the next.
func Install(ctx context.Context, k Kubectl, steps []Step) error {
	for _, s := range steps {
		if err := k.Apply(ctx, s); err != nil {
			return err
		}
		if err := k.WaitFor(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// Apply is `kubectl apply -k` of s.
func (k Kubectl) Apply(ctx context.Context, s Step) error {
	k.say("applying %s (%s)", s.Name, s.Dir)
	out, err := k.run(ctx, "apply", "-k", s.Dir)
	if err != nil {
		return fmt.Errorf("%s: %w", s.Name, err)
	}
	// What kubectl said (each object created, configured or unchanged,
	// and the API server's warnings).
	if k.Progress != nil {
		io.WriteString(k.Progress, out)
	}
	return nil
}

// WaitFor waits for s's Wait list: CRDs until Established, Deployments
// and DaemonSets until rolled out (`kubectl rollout status`: every
// replica updated and available), within k.Timeout for the Step.
func (k Kubectl) WaitFor(ctx context.Context, s Step) error {
	timeout := k.Timeout
	if timeout <= 0 {
		timeout = DefaultStepTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var crds []string
	for _, w := range s.Wait {
		if w.Kind == "CustomResourceDefinition" {
			crds = append(crds, "crd/"+w.Name)
		}
	}
	if len(crds) > 0 {
		k.say("waiting for %d CRDs to be established", len(crds))
		args := append([]string{"wait", "--for=condition=Established", "--timeout=" + timeout.String()}, crds...)
		if _, err := k.run(ctx, args...); err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
	}
	for _, w := range s.Wait {
		var kind string
		switch w.Kind {
		case "CustomResourceDefinition":
			continue
		case "Deployment":
			kind = "deployment"
		case "DaemonSet":
			kind = "daemonset"
		default:
			return fmt.Errorf("%s: cannot wait for a %s", s.Name, w.Kind)
		}
		k.say("waiting for %s", w)
		left := time.Until(deadlineOf(ctx))
		if _, err := k.run(ctx, "rollout", "status", "-n", w.Namespace, kind+"/"+w.Name,
			"--timeout="+left.Round(time.Second).String()); err != nil {
			return fmt.Errorf("%s: %s not ready within %s: %w", s.Name, w, timeout, err)
		}
	}
	return nil
}

func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// run runs kubectl with args and returns its output; an error carries it.
func (k Kubectl) run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, k.Path, append([]string{"--kubeconfig", k.Kubeconfig}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

func (k Kubectl) say(format string, args ...any) {
	if k.Progress != nil {
		fmt.Fprintf(k.Progress, "knative: "+format+"\n", args...)
	}
}
