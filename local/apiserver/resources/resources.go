package resources

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podgate/podgate/local/servingv1"
)

// Resource names one collection the control API serves.
type Resource struct {
	Group   string // "" for the core group
	Version string
	Plural  string // the path segment: "pods"
	Kind    string // "Pod"
}

// The resources the control API serves.
var (
	Pods           = Resource{Version: "v1", Plural: "pods", Kind: "Pod"}
	Events         = Resource{Version: "v1", Plural: "events", Kind: "Event"}
	EndpointSlices = Resource{Group: "discovery.k8s.io", Version: "v1", Plural: "endpointslices", Kind: "EndpointSlice"}
	Services       = Resource{Group: servingv1.SchemeGroupVersion.Group, Version: servingv1.SchemeGroupVersion.Version, Plural: "services", Kind: "Service"}
)

// GroupVersion is the resource's apiVersion.
func (r Resource) GroupVersion() schema.GroupVersion {
	return schema.GroupVersion{Group: r.Group, Version: r.Version}
}

// GroupResource names the resource in errors: "pods",
// "endpointslices.discovery.k8s.io".
func (r Resource) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: r.Group, Resource: r.Plural}
}

// Path is the URL path (unescaped) of the collection in namespace ("" for
// all namespaces) or, with a name, of one object.
func (r Resource) Path(namespace, name string) string {
	p := "/api/" + r.Version
	if r.Group != "" {
		p = "/apis/" + r.Group + "/" + r.Version
	}
	if namespace != "" {
		p += "/namespaces/" + namespace
	}
	p += "/" + r.Plural
	if name != "" {
		p += "/" + name
	}
	return p
}
