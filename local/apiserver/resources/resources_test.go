package resources

import "testing"

func TestPathsAndNamesAreTheAPIServers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name              string
		res               Resource
		namespace, object string
		wantPath, wantGR  string
		wantGroupVersion  string
	}{
		{"core, all namespaces", Pods, "", "", "/api/v1/pods", "pods", "v1"},
		{"core, one namespace", Events, "prod", "", "/api/v1/namespaces/prod/events", "events", "v1"},
		{"core, one object", Pods, "default", "web", "/api/v1/namespaces/default/pods/web", "pods", "v1"},
		{"a group", EndpointSlices, "default", "web", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/web", "endpointslices.discovery.k8s.io", "discovery.k8s.io/v1"},
		{"Knative's group", Services, "", "", "/apis/serving.knative.dev/v1/services", "services.serving.knative.dev", "serving.knative.dev/v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.res.Path(tc.namespace, tc.object); got != tc.wantPath {
				t.Errorf("Path = %q, want %q", got, tc.wantPath)
			}
			if got := tc.res.GroupResource().String(); got != tc.wantGR {
				t.Errorf("GroupResource = %q, want %q", got, tc.wantGR)
			}
			if got := tc.res.GroupVersion().String(); got != tc.wantGroupVersion {
				t.Errorf("GroupVersion = %q, want %q", got, tc.wantGroupVersion)
			}
		})
	}
}
