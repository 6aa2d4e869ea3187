package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/podgate/podgate/local/apiserver"
	"github.com/podgate/podgate/local/podctl"
)

func init() { register(newGetCmd) }

// getOptions are the flags of `podgate get`, named as kubectl names them.
type getOptions struct {
	api           string
	output        string
	watch         bool
	selector      string
	fieldSelector string
	namespace     string
	allNamespaces bool
	noHeaders     bool
}

func newGetCmd() *cobra.Command {
	var o getOptions
	cmd := &cobra.Command{
		Use:   "get pods|events|endpoints|services [NAME...]",
		Short: "Show pods, events, endpoints or Knative services of a running 'podgate run'",
		Long: `Show what 'podgate run' is running, read from its control API, in the tables
kubectl prints: pods with kubectl's READY/STATUS/RESTARTS rules, events with
repeats folded ("2m (x3 over 5m)"), EndpointSlices, and Knative Services as
'kubectl get ksvc' shows them.

Resource types: pods (po), events (ev), endpoints (endpointslices, ep),
services (ksvc). -o json|yaml prints the list as the API serves it.

Exit status: 0 ok, 1 not found or podgate not reachable, 2 usage error.`,
		Example: `  podgate get pods
  podgate get pods -o wide -w
  podgate get events
  podgate get pods -l serving.knative.dev/service=hello -o yaml
  podgate get endpoints --api 127.0.0.1:9701`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGet(cmd, o, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.api, "api", apiserver.DefaultAddr, "address of the control API of 'podgate run'")
	f.StringVarP(&o.output, "output", "o", "", "output format: wide, json, yaml or name")
	f.BoolVarP(&o.watch, "watch", "w", false, "after listing, print a row for every change")
	f.StringVarP(&o.selector, "selector", "l", "", "label selector, e.g. serving.knative.dev/service=hello,app!=db")
	f.StringVar(&o.fieldSelector, "field-selector", "", "field selector, e.g. status.phase=Running")
	f.StringVarP(&o.namespace, "namespace", "n", "default", "namespace to show")
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "show every namespace")
	f.BoolVar(&o.noHeaders, "no-headers", false, "leave out the header row")
	return cmd
}

func runGet(cmd *cobra.Command, o getOptions, args []string) error {
	r := podctl.GetRequest{Args: args, Namespace: o.namespace, AllNamespaces: o.allNamespaces,
		LabelSelector: o.selector, FieldSelector: o.fieldSelector, Output: o.output, Watch: o.watch, NoHeaders: o.noHeaders}
	return onAPI(cmd, o.api, r.Check, func(ctx context.Context, c *podctl.Client) error {
		return podctl.Get(ctx, c, r, cmd.OutOrStdout(), cmd.ErrOrStderr())
	})
}

// onAPI runs f with a client of the control API at addr (--api), after
// check, until SIGINT or SIGTERM; errors are podctl's (ctlError).
func onAPI(cmd *cobra.Command, addr string, check func() error, f func(context.Context, *podctl.Client) error) error {
	if err := check(); err != nil {
		return ctlError(err)
	}
	c, err := podctl.NewClient(addr)
	if err != nil {
		return usageErrorf("--api: %v", err)
	}
	defer c.Close()
	ctx, stop := signal.NotifyContext(contextOf(cmd), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return ctlError(f(ctx, c))
}

// ctlError is a podctl error as the CLI's: exit 2 for a usage error, 1
// for anything else (the server's answer, podgate not reachable).
func ctlError(err error) error {
	var ue *podctl.UsageError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ue):
		return usageErrorf("%v", err)
	}
	return invalidf("%v", err)
}
