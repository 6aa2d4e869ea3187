package podctl

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podgate/podgate/local/printers"
	"github.com/podgate/podgate/local/servingv1"
)

// item is one object ready to print.
type item = printers.Item

// kind is one resource type `podgate get` knows.
type kind interface {
	names() []string
	printed() printers.Resource
	list(ctx context.Context, c *Client, namespace string, opts metav1.ListOptions) (list runtime.Object, items []item, err error)
	get(ctx context.Context, c *Client, namespace, name string) (item, error)
	watch(ctx context.Context, c *Client, namespace string, opts metav1.ListOptions) (watch.Interface, error)
	decode(obj runtime.Object) (item, error)
}

// typedClient is what client-go's typed clients of one resource in one
// namespace offer `podgate get`.
type typedClient[T, L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// kindOf implements kind for one API type T (a pointer) and its list L.
type kindOf[T interface {
	runtime.Object
	metav1.Object
}, L runtime.Object] struct {
	gvk     schema.GroupVersionKind
	client  func(c *Client, namespace string) typedClient[T, L]
	aliases []string
	print   printers.Resource
	row     func(obj T, wide bool, now time.Time) []string
	// sort orders list rows; nil keeps the API's order (namespace, name).
	sort func(list L)
}

func (k *kindOf[T, L]) names() []string            { return k.aliases }
func (k *kindOf[T, L]) printed() printers.Resource { return k.print }

func (k *kindOf[T, L]) list(ctx context.Context, c *Client, namespace string, opts metav1.ListOptions) (runtime.Object, []item, error) {
	l, err := k.client(c, namespace).List(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	// client-go drops apiVersion and kind on decoding; -o json|yaml print
	// the list as the API serves it.
	l.GetObjectKind().SetGroupVersionKind(k.gvk.GroupVersion().WithKind(k.gvk.Kind + "List"))
	if k.sort != nil {
		k.sort(l)
	}
	objs, err := meta.ExtractList(l)
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s list: %w", k.gvk.Kind, err)
	}
	items := make([]item, len(objs))
	for i, obj := range objs {
		if items[i], err = k.decode(obj); err != nil {
			return nil, nil, err
		}
	}
	return l, items, nil
}

func (k *kindOf[T, L]) get(ctx context.Context, c *Client, namespace, name string) (item, error) {
	obj, err := k.client(c, namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return item{}, err
	}
	return k.decode(obj)
}

func (k *kindOf[T, L]) watch(ctx context.Context, c *Client, namespace string, opts metav1.ListOptions) (watch.Interface, error) {
	return k.client(c, namespace).Watch(ctx, opts)
}

func (k *kindOf[T, L]) decode(o runtime.Object) (item, error) {
	obj, ok := o.(T)
	if !ok {
		return item{}, fmt.Errorf("got a %T where a %s was due", o, k.gvk.Kind)
	}
	// Objects come without apiVersion and kind (client-go drops them);
	// printed objects carry them, as kubectl's do.
	obj.GetObjectKind().SetGroupVersionKind(k.gvk)
	return item{Obj: obj, Namespace: obj.GetNamespace(), Name: obj.GetName(),
		Row: func(wide bool, now time.Time) []string { return k.row(obj, wide, now) }}, nil
}

var kinds = []kind{
	&kindOf[*corev1.Pod, *corev1.PodList]{
		gvk: corev1.SchemeGroupVersion.WithKind("Pod"),
		client: func(c *Client, ns string) typedClient[*corev1.Pod, *corev1.PodList] {
			return c.CoreV1().Pods(ns)
		},
		aliases: []string{"pods", "pod", "po"},
		print:   printers.Pods, row: printers.PodRow,
	},
	&kindOf[*corev1.Event, *corev1.EventList]{
		gvk: corev1.SchemeGroupVersion.WithKind("Event"),
		client: func(c *Client, ns string) typedClient[*corev1.Event, *corev1.EventList] {
			return c.CoreV1().Events(ns)
		},
		aliases: []string{"events", "event", "ev"},
		print:   printers.Events, row: printers.EventRow,
		sort: func(l *corev1.EventList) { printers.SortEvents(l.Items) },
	},
	&kindOf[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList]{
		gvk: discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"),
		client: func(c *Client, ns string) typedClient[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList] {
			return c.DiscoveryV1().EndpointSlices(ns)
		},
		aliases: []string{"endpoints", "endpoint", "ep", "endpointslices", "endpointslice"},
		print:   printers.EndpointSlices, row: printers.EndpointSliceRow,
	},
	&kindOf[*servingv1.Service, *servingv1.ServiceList]{
		gvk: servingv1.SchemeGroupVersion.WithKind("Service"),
		client: func(c *Client, ns string) typedClient[*servingv1.Service, *servingv1.ServiceList] {
			return c.Serving.Services(ns)
		},
		aliases: []string{"services", "service", "ksvc", "ksvcs", "kservice"},
		print:   printers.Services, row: printers.ServiceRow,
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
