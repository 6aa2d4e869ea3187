package apiserver

import (
	"net/http"
	goruntime "runtime"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"

	"github.com/podgate/podgate/local/apiserver/resources"
)

// Version is what /version reports as gitVersion; the binary sets it.
var Version = "v0.0.0-podgate"

// The discovery documents: what kubectl and client-go's discovery client
// read to learn which resources exist and which verbs they take. They are
// the legacy (unaggregated) documents; a client that asks for aggregated
// discovery (Accept: …;as=APIGroupDiscoveryList) gets these as plain
// application/json and falls back to reading them, as it does with an API
// server that predates aggregation.

var (
	readVerbs  = metav1.Verbs{"get", "list", "watch"}
	podVerbs   = metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"}
	eventVerbs = metav1.Verbs{"create", "get", "list", "patch", "update", "watch"}
)

func (s *Server) coreResources() []metav1.APIResource {
	return []metav1.APIResource{
		{Name: "events", SingularName: "event", Namespaced: true, Kind: "Event", Verbs: eventVerbs, ShortNames: []string{"ev"}},
		{Name: "pods", SingularName: "pod", Namespaced: true, Kind: "Pod", Verbs: podVerbs, ShortNames: []string{"po"}, Categories: []string{"all"}},
		{Name: "pods/log", SingularName: "", Namespaced: true, Kind: "Pod", Verbs: metav1.Verbs{"get"}},
		{Name: "pods/status", SingularName: "", Namespaced: true, Kind: "Pod", Verbs: metav1.Verbs{"get", "patch", "update"}},
	}
}

func (s *Server) mountDiscovery() {
	get := func(body func() any) http.HandlerFunc {
		return s.methods(metav1.SchemeGroupVersion.WithResource("discovery").GroupResource(), map[string]http.HandlerFunc{
			http.MethodGet: func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, body()) },
		})
	}
	s.mux.HandleFunc("/version", get(func() any {
		return version.Info{Major: "1", Minor: "37", GitVersion: Version, GoVersion: goruntime.Version(),
			Compiler: goruntime.Compiler, Platform: goruntime.GOOS + "/" + goruntime.GOARCH}
	}))
	s.mux.HandleFunc("/api", get(func() any {
		return metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: ""}}}
	}))
	s.mux.HandleFunc("/api/v1", get(func() any {
		return metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: "v1", APIResources: s.coreResources()}
	}))
	groups := []struct {
		res  resources.Resource
		list []metav1.APIResource
	}{
		{resources.EndpointSlices, []metav1.APIResource{{Name: "endpointslices", SingularName: "endpointslice", Namespaced: true, Kind: "EndpointSlice", Verbs: readVerbs}}},
		{resources.Services, []metav1.APIResource{{Name: "services", SingularName: "service", Namespaced: true, Kind: "Service", Verbs: readVerbs,
			ShortNames: []string{"kservice", "ksvc"}, Categories: []string{"all", "knative", "serving"}}}},
	}
	var apiGroups []metav1.APIGroup
	for _, g := range groups {
		gv := g.res.GroupVersion()
		gvd := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
		apiGroups = append(apiGroups, metav1.APIGroup{Name: gv.Group, Versions: []metav1.GroupVersionForDiscovery{gvd}, PreferredVersion: gvd})
		list := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: gv.String(), APIResources: g.list}
		group := apiGroups[len(apiGroups)-1]
		group.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
		s.mux.HandleFunc("/apis/"+gv.Group, get(func() any { return group }))
		s.mux.HandleFunc("/apis/"+gv.String(), get(func() any { return list }))
	}
	s.mux.HandleFunc("/apis", get(func() any {
		return metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: apiGroups}
	}))
}
