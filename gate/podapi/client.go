package podapi

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// podsClient is the gate's whole API client: pods of one namespace over a
// REST client that knows core/v1 and nothing else.
//
// Why not client-go's clientset or its typed core/v1 client: both decode
// through k8s.io/client-go/kubernetes/scheme, which registers every API
// group of Kubernetes at start. In the gate — one per pod, on every pod —
// that cost about 11 MB of resident memory for the one resource it reads
// (measured: an idle process linking the gate with the typed client vs.
// with this one, docs/benchmarks.md).
type podsClient struct {
	rest      rest.Interface
	params    runtime.ParameterCodec
	namespace string
}

// coreScheme knows core/v1 and the meta types a list, a watch and an
// error Status need.
var coreScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		panic(fmt.Sprintf("core/v1 scheme: %v", err))
	}
	metav1.AddToGroupVersion(s, corev1.SchemeGroupVersion)
	return s
}()

func newPodsClient(cfg *rest.Config, namespace string) (*podsClient, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.APIPath = "/api"
	c.NegotiatedSerializer = serializer.NewCodecFactory(coreScheme).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("API client for %s: %w", cfg.Host, err)
	}
	return &podsClient{rest: rc, params: runtime.NewParameterCodec(coreScheme), namespace: namespace}, nil
}

// listWatchOne lists and watches the one pod named name.
func (c *podsClient) listWatchOne(name string) *cache.ListWatch {
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			list := &corev1.PodList{}
			err := c.rest.Get().Namespace(c.namespace).Resource("pods").VersionedParams(&o, c.params).Do(ctx).Into(list)
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector, o.Watch = sel, true
			return c.rest.Get().Namespace(c.namespace).Resource("pods").VersionedParams(&o, c.params).Watch(ctx)
		},
	}
}

// patchStatus sends a strategic merge patch of the pod's status
// subresource.
func (c *podsClient) patchStatus(ctx context.Context, name string, patch []byte) error {
	return c.rest.Patch(types.StrategicMergePatchType).Namespace(c.namespace).Resource("pods").Name(name).
		SubResource("status").Body(patch).Do(ctx).Error()
}
