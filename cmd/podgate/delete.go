package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/api"
	"github.com/podgate/podgate/apiclient"
)

func init() { register(newDeleteCmd) }

func newDeleteCmd() *cobra.Command {
	var (
		addr      string
		namespace string
		grace     int64
		now       bool
		force     bool
	)
	cmd := &cobra.Command{
		Use:   "delete pod NAME... | delete pod/NAME...",
		Short: "Terminate pods of a running 'podgate run' gracefully",
		Long: `Delete pods the way kubectl does: the pod turns Terminating at once (its
endpoint stops being ready, preStop hooks run, then SIGTERM, then SIGKILL at
the grace period) and the command returns as soon as termination has
started. A pod of a Deployment or Knative Service is replaced.

--grace-period replaces the pod's terminationGracePeriodSeconds; as with
kubectl, 0 is taken as 1 unless --force is given, and --force alone kills at
once.

Exit status: 0 ok, 1 a pod was not found or podgate is not reachable, 2 usage
error.`,
		Example: `  podgate delete pod hello-00001-deployment-7d9c4kq-x2x4q
  podgate delete pod/hello-00001-deployment-7d9c4kq-x2x4q --grace-period 5
  podgate delete pod web-0 web-1 --now`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			names, err := podNames(args)
			if err != nil {
				return err
			}
			if err := checkNamespaceFlag(namespace); err != nil {
				return err
			}
			opts, warning, err := deleteOptions(cmd.Flags().Changed("grace-period"), grace, now, force)
			if err != nil {
				return err
			}
			c, err := apiclient.New(addr)
			if err != nil {
				return usageErrorf("--api: %v", err)
			}
			defer c.Close()
			if warning != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), warning)
			}
			verb := "deleted"
			if force {
				verb = "force deleted"
			}
			var failed []error
			for _, name := range names {
				_, err := c.DeletePod(cmd.Context(), namespace, name, opts)
				var unreachable *apiclient.UnreachableError
				switch {
				case errors.As(err, &unreachable):
					return invalidf("%v", err)
				case err != nil:
					failed = append(failed, err)
				default:
					fmt.Fprintf(cmd.OutOrStdout(), "pod %q %s\n", name, verb)
				}
			}
			if len(failed) > 0 {
				return invalidf("%v", errors.Join(failed...))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "api", api.DefaultAddr, "address of the control API of 'podgate run'")
	f.StringVarP(&namespace, "namespace", "n", "default", "namespace of the pods")
	f.Int64Var(&grace, "grace-period", -1, "seconds the pod gets to stop; -1 keeps the pod's terminationGracePeriodSeconds")
	f.BoolVar(&now, "now", false, "stop at once (same as --grace-period=1)")
	f.BoolVar(&force, "force", false, "kill at once without a grace period")
	return cmd
}

// podNames reads `pod NAME...` or `pod/NAME...`.
func podNames(args []string) ([]string, error) {
	isPod := func(s string) bool { return s == "pod" || s == "pods" || s == "po" }
	if len(args) == 0 {
		return nil, usageErrorf("you must specify pods to delete: delete pod NAME")
	}
	if isPod(args[0]) {
		if len(args) == 1 {
			return nil, usageErrorf("you must name the pods to delete: delete pod NAME")
		}
		for _, a := range args[1:] {
			if strings.Contains(a, "/") {
				return nil, usageErrorf("%q: there is no need to specify a resource type as a separate argument when passing arguments in resource/name form", a)
			}
		}
		return args[1:], nil
	}
	var names []string
	for _, a := range args {
		typ, name, ok := strings.Cut(a, "/")
		switch {
		case !ok && len(names) == 0:
			return nil, usageErrorf("%q: podgate deletes pods only: delete pod NAME", a)
		case !ok || !isPod(typ):
			return nil, usageErrorf("%q: podgate deletes pods only: delete pod/NAME", a)
		case name == "":
			return nil, usageErrorf("%q: a pod name is required", a)
		}
		names = append(names, name)
	}
	return names, nil
}

// deleteOptions applies kubectl's rules for --grace-period, --now and
// --force.
func deleteOptions(graceSet bool, grace int64, now, force bool) (metav1.DeleteOptions, string, error) {
	var opts metav1.DeleteOptions
	if now && graceSet {
		return opts, "", usageErrorf("--now and --grace-period cannot be specified together")
	}
	if graceSet && grace < -1 {
		return opts, "", usageErrorf("--grace-period %d: must be -1 (the pod's own) or more", grace)
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
