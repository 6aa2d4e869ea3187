package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podgate/podgate/api"
	"github.com/podgate/podgate/api/resources"
	"github.com/podgate/podgate/apiclient"
	"github.com/podgate/podgate/objstore"
	"github.com/podgate/podgate/printers"
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
	f.StringVar(&o.api, "api", api.DefaultAddr, "address of the control API of 'podgate run'")
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
	if len(args) == 0 {
		return usageErrorf("you must specify the type of resource to get: %s", strings.Join(kindNames(), ", "))
	}
	k := findKind(args[0])
	if k == nil {
		return usageErrorf("the server doesn't have a resource type %q (podgate serves %s)", args[0], strings.Join(kindNames(), ", "))
	}
	names := args[1:]
	if !slices.Contains(printers.Formats, o.output) {
		return usageErrorf("-o %q: must be wide, json, yaml or name", o.output)
	}
	if err := checkNamespaceFlag(o.namespace); err != nil {
		return err
	}
	// Selectors are parsed here as the API server would parse them: a
	// malformed one is a usage error, not a refusal by the server.
	if _, err := labels.Parse(o.selector); err != nil {
		return usageErrorf("-l %q: %v", o.selector, err)
	}
	if _, err := fields.ParseSelector(o.fieldSelector); err != nil {
		return usageErrorf("--field-selector %q: %v", o.fieldSelector, err)
	}
	if len(names) > 0 && o.selector != "" {
		return usageErrorf("name cannot be provided when a selector is specified")
	}
	if o.watch && len(names) > 1 {
		return usageErrorf("watch is only supported on one resource or on a whole collection, not on %d names", len(names))
	}
	if o.allNamespaces && len(names) > 0 {
		return usageErrorf("a resource cannot be retrieved by name across all namespaces")
	}
	c, err := apiclient.New(o.api)
	if err != nil {
		return usageErrorf("--api: %v", err)
	}
	defer c.Close()

	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	p := &printers.Printer{Out: cmd.OutOrStdout(), Resource: k.printed(), Format: o.output, AllNamespaces: o.allNamespaces, Headers: !o.noHeaders}
	ns := o.namespace
	if o.allNamespaces {
		ns = ""
	}
	opts := apiclient.ListOptions{Namespace: ns, LabelSelector: o.selector, FieldSelector: o.fieldSelector}

	if len(names) > 0 && !o.watch {
		return getByName(ctx, c, k, p, ns, names)
	}
	if len(names) == 1 {
		// As kubectl does for `get -w NAME`: watch the list, narrowed to it.
		opts.FieldSelector = joinSelectors(opts.FieldSelector, "metadata.name="+names[0])
	}
	list, items, err := k.list(ctx, c, opts)
	if err != nil {
		return cliError(err)
	}
	if err := p.PrintList(list, items); err != nil {
		return err
	}
	if len(items) == 0 && !o.watch && o.output != "json" && o.output != "yaml" {
		if ns == "" {
			fmt.Fprintln(cmd.ErrOrStderr(), "No resources found")
		} else {
			fmt.Fprintf(cmd.ErrOrStderr(), "No resources found in %s namespace.\n", ns)
		}
	}
	if !o.watch {
		return nil
	}
	opts.ResourceVersion = listVersion(list)
	return watchAndPrint(ctx, c, k, p, opts)
}

func getByName(ctx context.Context, c *apiclient.Client, k kind, p *printers.Printer, ns string, names []string) error {
	var items []item
	var missing []error
	for _, name := range names {
		it, err := k.get(ctx, c, ns, name)
		if apierrors.IsNotFound(err) {
			missing = append(missing, err)
			continue
		}
		if err != nil {
			return cliError(err)
		}
		items = append(items, it)
	}
	var err error
	if len(names) == 1 && len(items) == 1 {
		err = p.PrintObject(items[0])
	} else if len(items) > 0 {
		err = p.PrintList(nil, items)
	}
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return invalidf("%v", errors.Join(missing...))
	}
	return nil
}

func watchAndPrint(ctx context.Context, c *apiclient.Client, k kind, p *printers.Printer, opts apiclient.ListOptions) error {
	w, err := c.Watch(ctx, k.resource(), opts)
	if err != nil {
		return cliError(err)
	}
	defer w.Close()
	for {
		ev, err := w.Next()
		switch {
		case errors.Is(err, io.EOF) || ctx.Err() != nil:
			// The server went away or the user pressed Ctrl-C: done, as
			// kubectl's -w is.
			return nil
		case err != nil:
			return cliError(err)
		}
		if ev.Type == watch.Bookmark {
			continue
		}
		it, err := k.decode(ev)
		if err != nil {
			return invalidf("%v", err)
		}
		if err := p.PrintObject(it); err != nil {
			return err
		}
	}
}

// checkNamespaceFlag refuses a -n that can be no namespace (a DNS label).
func checkNamespaceFlag(ns string) error {
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return usageErrorf("-n %q: %s", ns, strings.Join(errs, "; "))
	}
	return nil
}

// cliError turns client errors into exit 1 with the message a user can act
// on: "cannot reach podgate at …", `pods "x" not found`.
func cliError(err error) error {
	return invalidf("%v", err)
}

func joinSelectors(a, b string) string {
	if a == "" {
		return b
	}
	return a + "," + b
}

func listVersion(list any) string {
	if l, ok := list.(interface{ GetResourceVersion() string }); ok {
		return l.GetResourceVersion()
	}
	return ""
}

// item is one object ready to print.
type item = printers.Item

// kind is one resource type `podgate get` knows.
type kind interface {
	resource() resources.Resource
	names() []string
	printed() printers.Resource
	list(ctx context.Context, c *apiclient.Client, opts apiclient.ListOptions) (list any, items []item, err error)
	get(ctx context.Context, c *apiclient.Client, namespace, name string) (item, error)
	decode(ev apiclient.WatchEvent) (item, error)
}

// kindOf implements kind for one API type T (PT is *T).
type kindOf[T any, PT interface {
	*T
	objstore.Object
}] struct {
	res     resources.Resource
	aliases []string
	print   printers.Resource
	row     func(obj PT, wide bool, now time.Time) []string
	// sort orders list rows; nil keeps the API's order (namespace, name).
	sort func(items []T)
}

// listOf has the JSON shape of PodList, EventList, … for any item type.
type listOf[T any] struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []T `json:"items"`
}

func (k *kindOf[T, PT]) resource() resources.Resource { return k.res }
func (k *kindOf[T, PT]) names() []string              { return k.aliases }
func (k *kindOf[T, PT]) printed() printers.Resource   { return k.print }

func (k *kindOf[T, PT]) list(ctx context.Context, c *apiclient.Client, opts apiclient.ListOptions) (any, []item, error) {
	var l listOf[T]
	if err := c.List(ctx, k.res, opts, &l); err != nil {
		return nil, nil, err
	}
	if k.sort != nil {
		k.sort(l.Items)
	}
	items := make([]item, len(l.Items))
	for i := range l.Items {
		items[i] = k.item(&l.Items[i])
	}
	return &l, items, nil
}

func (k *kindOf[T, PT]) get(ctx context.Context, c *apiclient.Client, namespace, name string) (item, error) {
	obj := PT(new(T))
	if err := c.Get(ctx, k.res, namespace, name, obj); err != nil {
		return item{}, err
	}
	return k.item(obj), nil
}

func (k *kindOf[T, PT]) decode(ev apiclient.WatchEvent) (item, error) {
	obj := PT(new(T))
	if err := ev.Decode(obj); err != nil {
		return item{}, err
	}
	return k.item(obj), nil
}

func (k *kindOf[T, PT]) item(obj PT) item {
	// List items come without apiVersion and kind (as from the API server);
	// printed objects carry them, as kubectl's do.
	obj.GetObjectKind().SetGroupVersionKind(k.res.GroupVersion().WithKind(k.res.Kind))
	return item{Obj: obj, Namespace: obj.GetNamespace(), Name: obj.GetName(),
		Row: func(wide bool, now time.Time) []string { return k.row(obj, wide, now) }}
}

var kinds = []kind{
	&kindOf[corev1.Pod, *corev1.Pod]{
		res: resources.Pods, aliases: []string{"pods", "pod", "po"},
		print: printers.Pods, row: printers.PodRow,
	},
	&kindOf[corev1.Event, *corev1.Event]{
		res: resources.Events, aliases: []string{"events", "event", "ev"},
		print: printers.Events, row: printers.EventRow, sort: printers.SortEvents,
	},
	&kindOf[discoveryv1.EndpointSlice, *discoveryv1.EndpointSlice]{
		res: resources.EndpointSlices, aliases: []string{"endpoints", "endpoint", "ep", "endpointslices", "endpointslice"},
		print: printers.EndpointSlices, row: printers.EndpointSliceRow,
	},
	&kindOf[objstore.KnativeService, *objstore.KnativeService]{
		res: resources.Services, aliases: []string{"services", "service", "ksvc", "ksvcs", "kservice"},
		print: printers.Services, row: printers.ServiceRow,
	},
}

func findKind(name string) kind {
	for _, k := range kinds {
		if slices.Contains(k.names(), strings.ToLower(name)) {
			return k
		}
	}
	return nil
}

func kindNames() []string {
	var out []string
	for _, k := range kinds {
		out = append(out, k.names()[0])
	}
	return out
}
