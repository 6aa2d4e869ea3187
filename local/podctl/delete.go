package podctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeleteRequest is one `podgate delete pod NAME...` (or pod/NAME...).
type DeleteRequest struct {
	Args      []string
	Namespace string
	// GracePeriod is --grace-period, when GracePeriodSet.
	GracePeriod    int64
	GracePeriodSet bool
	Now, Force     bool
}

// Check reports a request that breaks the rules (a *UsageError).
func (r DeleteRequest) Check() error {
	_, _, _, err := r.parse()
	return err
}

func (r DeleteRequest) parse() ([]string, metav1.DeleteOptions, string, error) {
	names, err := podNames(r.Args)
	if err != nil {
		return nil, metav1.DeleteOptions{}, "", err
	}
	if err := checkNamespace(r.Namespace); err != nil {
		return nil, metav1.DeleteOptions{}, "", err
	}
	opts, warning, err := deleteOptions(r.GracePeriodSet, r.GracePeriod, r.Now, r.Force)
	return names, opts, warning, err
}

// Delete starts the graceful deletion of each pod, as kubectl does: it
// prints `pod "NAME" deleted` for each on out (and the warning of an
// immediate deletion on errOut first). Pods that cannot be deleted are the
// error, joined; a server that does not answer ends it at once.
func Delete(ctx context.Context, c *Client, r DeleteRequest, out, errOut io.Writer) error {
	names, opts, warning, err := r.parse()
	if err != nil {
		return err
	}
	if warning != "" {
		fmt.Fprintln(errOut, warning)
	}
	verb := "deleted"
	if r.Force {
		verb = "force deleted"
	}
	var failed []error
	for _, name := range names {
		err := c.reached(c.CoreV1().Pods(r.Namespace).Delete(ctx, name, opts))
		var unreachable *UnreachableError
		switch {
		case errors.As(err, &unreachable):
			return err
		case err != nil:
			failed = append(failed, err)
		default:
			fmt.Fprintf(out, "pod %q %s\n", name, verb)
		}
	}
	return errors.Join(failed...)
}

// podNames reads `pod NAME...` or `pod/NAME...`.
func podNames(args []string) ([]string, error) {
	if len(args) == 0 {
		return nil, usagef("you must specify pods to delete: delete pod NAME")
	}
	if isPod(args[0]) {
		if len(args) == 1 {
			return nil, usagef("you must name the pods to delete: delete pod NAME")
		}
		for _, a := range args[1:] {
			if strings.Contains(a, "/") {
				return nil, usagef("%q: there is no need to specify a resource type as a separate argument when passing arguments in resource/name form", a)
			}
		}
		return args[1:], nil
	}
	var names []string
	for _, a := range args {
		typ, name, ok := strings.Cut(a, "/")
		switch {
		case !ok && len(names) == 0:
			return nil, usagef("%q: podgate deletes pods only: delete pod NAME", a)
		case !ok || !isPod(typ):
			return nil, usagef("%q: podgate deletes pods only: delete pod/NAME", a)
		case name == "":
			return nil, usagef("%q: a pod name is required", a)
		}
		names = append(names, name)
	}
	return names, nil
}

// deleteOptions applies kubectl's rules for --grace-period, --now and
// --force, and says when the deletion is immediate.
func deleteOptions(graceSet bool, grace int64, now, force bool) (metav1.DeleteOptions, string, error) {
	var opts metav1.DeleteOptions
	if now && graceSet {
		return opts, "", usagef("--now and --grace-period cannot be specified together")
	}
	if graceSet && grace < -1 {
		return opts, "", usagef("--grace-period %d: must be -1 (the pod's own) or more", grace)
	}
	if !graceSet {
		grace = -1
	}
	if now {
		grace = 1
	}
	switch {
	case force && grace == -1:
		grace = 0
	case !force && grace == 0:
		// kubectl's safeguard: 0 without --force means "as fast as a
		// graceful stop allows", 1 second.
		grace = 1
	}
	warning := ""
	if grace == 0 {
		warning = "Warning: immediate deletion kills the pod's containers without waiting for them to stop."
	}
	if grace >= 0 {
		opts.GracePeriodSeconds = &grace
	}
	return opts, warning, nil
}
