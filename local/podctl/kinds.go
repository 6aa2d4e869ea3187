package podctl

import (
	"context"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/local/apiclient"
	"github.com/podgate/podgate/local/apiserver/resources"
	"github.com/podgate/podgate/local/objstore"
	"github.com/podgate/podgate/local/printers"
	"github.com/podgate/podgate/local/servingv1"
)

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
	&kindOf[servingv1.Service, *servingv1.Service]{
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
