package podctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podgate/podgate/local/printers"
)

// GetRequest is one `podgate get TYPE [NAME...]`, its flags named as
// kubectl names them.
type GetRequest struct {
	// Args are TYPE and the names, if any.
	Args          []string
	Namespace     string
	AllNamespaces bool
	LabelSelector string
	FieldSelector string
	// Output is "", wide, json, yaml or name.
	Output    string
	Watch     bool
	NoHeaders bool
}

// parse checks the request as kubectl would before asking the server:
// selectors are parsed as the API server parses them, so a malformed one
// is a usage error, not a refusal by the server.
func (r GetRequest) parse() (kind, []string, error) {
	if len(r.Args) == 0 {
		return nil, nil, usagef("you must specify the type of resource to get: %s", strings.Join(kindNames(), ", "))
	}
	k := findKind(r.Args[0])
	if k == nil {
		return nil, nil, usagef("the server doesn't have a resource type %q (podgate serves %s)", r.Args[0], strings.Join(kindNames(), ", "))
	}
	names := r.Args[1:]
	if !slices.Contains(printers.Formats, r.Output) {
		return nil, nil, usagef("-o %q: must be wide, json, yaml or name", r.Output)
	}
	if err := checkNamespace(r.Namespace); err != nil {
		return nil, nil, err
	}
	if _, err := labels.Parse(r.LabelSelector); err != nil {
		return nil, nil, usagef("-l %q: %v", r.LabelSelector, err)
	}
	if _, err := fields.ParseSelector(r.FieldSelector); err != nil {
		return nil, nil, usagef("--field-selector %q: %v", r.FieldSelector, err)
	}
	switch {
	case len(names) > 0 && r.LabelSelector != "":
		return nil, nil, usagef("name cannot be provided when a selector is specified")
	case r.Watch && len(names) > 1:
		return nil, nil, usagef("watch is only supported on one resource or on a whole collection, not on %d names", len(names))
	case r.AllNamespaces && len(names) > 0:
		return nil, nil, usagef("a resource cannot be retrieved by name across all namespaces")
	}
	return k, names, nil
}

// Check reports a request that breaks the rules (a *UsageError).
func (r GetRequest) Check() error {
	_, _, err := r.parse()
	return err
}

// Get does what `kubectl get` does: the objects named, or the list, in
// the format asked for on out ("No resources found" on errOut for an
// empty table); with Watch, a row for every change after that, until the
// server ends the watch or ctx ends.
func Get(ctx context.Context, c *Client, r GetRequest, out, errOut io.Writer) error {
	return c.reached(get(ctx, c, r, out, errOut))
}

func get(ctx context.Context, c *Client, r GetRequest, out, errOut io.Writer) error {
	k, names, err := r.parse()
	if err != nil {
		return err
	}
	p := &printers.Printer{Out: out, Resource: k.printed(), Format: r.Output, AllNamespaces: r.AllNamespaces, Headers: !r.NoHeaders}
	ns := r.Namespace
	if r.AllNamespaces {
		ns = ""
	}
	opts := metav1.ListOptions{LabelSelector: r.LabelSelector, FieldSelector: r.FieldSelector}
	if len(names) > 0 && !r.Watch {
		return getByName(ctx, c, k, p, ns, names)
	}
	if len(names) == 1 {
		// As kubectl does for `get -w NAME`: watch the list, narrowed to it.
		opts.FieldSelector = joinSelectors(opts.FieldSelector, "metadata.name="+names[0])
	}
	list, items, err := k.list(ctx, c, ns, opts)
	if err != nil {
		return err
	}
	if err := p.PrintList(list, items); err != nil {
		return err
	}
	if len(items) == 0 && !r.Watch && r.Output != "json" && r.Output != "yaml" {
		if ns == "" {
			fmt.Fprintln(errOut, "No resources found")
		} else {
			fmt.Fprintf(errOut, "No resources found in %s namespace.\n", ns)
		}
	}
	if !r.Watch {
		return nil
	}
	opts.ResourceVersion = listVersion(list)
	return watchAndPrint(ctx, c, k, p, ns, opts)
}

// getByName prints the objects found; the names not found are the error.
func getByName(ctx context.Context, c *Client, k kind, p *printers.Printer, ns string, names []string) error {
	var items []item
	var missing []error
	for _, name := range names {
		it, err := k.get(ctx, c, ns, name)
		if apierrors.IsNotFound(err) {
			missing = append(missing, err)
			continue
		}
		if err != nil {
			return err
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
	return errors.Join(missing...)
}

func watchAndPrint(ctx context.Context, c *Client, k kind, p *printers.Printer, ns string, opts metav1.ListOptions) error {
	w, err := k.watch(ctx, c, ns, opts)
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			// The user pressed Ctrl-C: done, as kubectl's -w is.
			return nil
		case ev, ok = <-w.ResultChan():
		}
		switch {
		case !ok || ctx.Err() != nil:
			// The server ended the watch or went away, or the user pressed
			// Ctrl-C as the event came (client-go reports the cancellation
			// as an ERROR event): done too.
			return nil
		case ev.Type == watch.Bookmark:
			continue
		case ev.Type == watch.Error:
			// 410 Expired among others: the server's Status.
			return apierrors.FromObject(ev.Object)
		}
		it, err := k.decode(ev.Object)
		if err != nil {
			return err
		}
		if err := p.PrintObject(it); err != nil {
			return err
		}
	}
}

func joinSelectors(a, b string) string {
	if a == "" {
		return b
	}
	return a + "," + b
}

func listVersion(list runtime.Object) string {
	if l, err := meta.ListAccessor(list); err == nil {
		return l.GetResourceVersion()
	}
	return ""
}
