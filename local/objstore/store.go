package objstore

import (
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podgate/podgate/local/servingv1"
)

// Object is what a Collection holds: a pointer to a Kubernetes API type
// (ObjectMeta for the key and version, DeepCopyObject for the copies).
type Object interface {
	runtime.Object
	metav1.Object
}

// Defaults for Options.
const (
	DefaultHistorySize = 1000
	DefaultWatchBuffer = 1000
)

// Options tune a Store. The zero value is ready to use.
type Options struct {
	// HistorySize is how many past changes each collection keeps so that a
	// watch can resume from an older resourceVersion (default 1000).
	HistorySize int
	// WatchBuffer is how many changes a watcher may fall behind before it is
	// dropped with a 410 Expired error (default 1000).
	WatchBuffer int
	// Now stamps creationTimestamp; default time.Now.
	Now func() time.Time
}

// Store holds one collection per kind, sharing one resourceVersion counter.
type Store struct {
	rv   atomic.Uint64
	opts Options

	Pods           *Collection[*corev1.Pod]
	Events         *Collection[*corev1.Event]
	EndpointSlices *Collection[*discoveryv1.EndpointSlice]
	Services       *Collection[*servingv1.Service]
}

// Kinds as the API names them: the GroupVersionKind stamped into objects and
// the GroupResource that error messages name ("pods \"x\" not found").
var (
	PodKind            = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	EventKind          = schema.GroupVersionKind{Version: "v1", Kind: "Event"}
	EndpointSliceKind  = discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice")
	KnativeServiceKind = servingv1.SchemeGroupVersion.WithKind("Service")

	PodResource            = schema.GroupResource{Resource: "pods"}
	EventResource          = schema.GroupResource{Resource: "events"}
	EndpointSliceResource  = discoveryv1.Resource("endpointslices")
	KnativeServiceResource = schema.GroupResource{Group: servingv1.SchemeGroupVersion.Group, Resource: "services"}
)

// New returns an empty store.
func New(opts Options) *Store {
	if opts.HistorySize <= 0 {
		opts.HistorySize = DefaultHistorySize
	}
	if opts.WatchBuffer <= 0 {
		opts.WatchBuffer = DefaultWatchBuffer
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Store{opts: opts}
	s.Pods = newCollection[*corev1.Pod](s, PodKind, PodResource)
	s.Events = newCollection[*corev1.Event](s, EventKind, EventResource)
	s.EndpointSlices = newCollection[*discoveryv1.EndpointSlice](s, EndpointSliceKind, EndpointSliceResource)
	s.Services = newCollection[*servingv1.Service](s, KnativeServiceKind, KnativeServiceResource)
	return s
}

// ResourceVersion is the store's current version: the version of its last
// write in any collection.
func (s *Store) ResourceVersion() string { return formatRV(s.rv.Load()) }
