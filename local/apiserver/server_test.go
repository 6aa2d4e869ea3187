package apiserver

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/local/objstore"
	"github.com/podgate/podgate/local/servingv1"
)

func TestListsHaveTheAPIServersShape(t *testing.T) {
	s := startServer(t, Config{})
	s.createPod(t, testPod("default", "web", nil))
	s.store.Events.Create(&corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web.1"}, Reason: "Started"})
	s.store.EndpointSlices.Create(&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-x"}, AddressType: discoveryv1.AddressTypeIPv4})
	s.store.Services.Create(&servingv1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hello"}})

	tests := []struct {
		name       string
		path       string
		apiVersion string
		kind       string
		itemKind   string // "" when the API server leaves items untyped
	}{
		{"pods are a PodList with untyped items", "/api/v1/pods", "v1", "PodList", ""},
		{"events are an EventList", "/api/v1/events", "v1", "EventList", ""},
		{"endpointslices are a discovery.k8s.io/v1 EndpointSliceList", "/apis/discovery.k8s.io/v1/endpointslices", "discovery.k8s.io/v1", "EndpointSliceList", ""},
		{"knative services are a ServiceList with typed items, as for a CRD", "/apis/serving.knative.dev/v1/services", "serving.knative.dev/v1", "ServiceList", "Service"},
		{"a namespaced list has the same shape", "/api/v1/namespaces/default/pods", "v1", "PodList", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := s.raw(t, http.MethodGet, tt.path)
			if code != http.StatusOK {
				t.Fatalf("%d %s", code, body)
			}
			var l struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				Metadata   struct {
					ResourceVersion string `json:"resourceVersion"`
				} `json:"metadata"`
				Items []struct {
					Kind     string `json:"kind"`
					Metadata struct {
						Name            string `json:"name"`
						ResourceVersion string `json:"resourceVersion"`
					} `json:"metadata"`
				} `json:"items"`
			}
			if err := json.Unmarshal([]byte(body), &l); err != nil {
				t.Fatal(err)
			}
			if l.APIVersion != tt.apiVersion || l.Kind != tt.kind {
				t.Errorf("apiVersion/kind = %s/%s, want %s/%s", l.APIVersion, l.Kind, tt.apiVersion, tt.kind)
			}
			if l.Metadata.ResourceVersion != "4" {
				t.Errorf("metadata.resourceVersion = %q, want 4", l.Metadata.ResourceVersion)
			}
			if len(l.Items) != 1 || l.Items[0].Kind != tt.itemKind || l.Items[0].Metadata.ResourceVersion == "" {
				t.Errorf("items = %+v, want one with kind %q", l.Items, tt.itemKind)
			}
		})
	}
}

func TestAnEmptyListHasAnEmptyItemsArray(t *testing.T) {
	s := startServer(t, Config{})
	code, body := s.raw(t, http.MethodGet, "/api/v1/namespaces/nowhere/pods")
	if code != http.StatusOK || !strings.Contains(body, `"items":[]`) {
		t.Errorf("%d %s", code, body)
	}
}

func TestGetReturnsTheTypedObject(t *testing.T) {
	s := startServer(t, Config{})
	s.createPod(t, testPod("default", "web", nil))
	code, body := s.raw(t, http.MethodGet, "/api/v1/namespaces/default/pods/web")
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	var p corev1.Pod
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatal(err)
	}
	if p.Kind != "Pod" || p.APIVersion != "v1" || p.Name != "web" || p.ResourceVersion != "1" {
		t.Errorf("got %s %s %s rv %s", p.APIVersion, p.Kind, p.Name, p.ResourceVersion)
	}
	got, err := s.client.CoreV1().Pods("default").Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil || got.UID != p.UID {
		t.Errorf("client GetPod: %v %v", got, err)
	}
}

func TestErrorsAreStatusObjects(t *testing.T) {
	s := startServer(t, Config{})
	s.createPod(t, testPod("default", "web", nil))
	tests := []struct {
		name    string
		method  string
		path    string
		code    int32
		reason  metav1.StatusReason
		message string
	}{
		{"a missing pod is 404 NotFound", "GET", "/api/v1/namespaces/default/pods/nope", 404, metav1.StatusReasonNotFound, `pods "nope" not found`},
		{"a pod in another namespace is 404", "GET", "/api/v1/namespaces/other/pods/web", 404, metav1.StatusReasonNotFound, `pods "web" not found`},
		{"a missing endpointslice names its group", "GET", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/nope", 404, metav1.StatusReasonNotFound, `endpointslices.discovery.k8s.io "nope" not found`},
		{"a missing knative service names its group", "GET", "/apis/serving.knative.dev/v1/namespaces/default/services/nope", 404, metav1.StatusReasonNotFound, `services.serving.knative.dev "nope" not found`},
		{"an unknown path is 404", "GET", "/api/v1/nodes", 404, metav1.StatusReasonNotFound, "the server could not find the requested resource (GET /api/v1/nodes)"},
		{"a write to a list is 405", "POST", "/api/v1/pods", 405, metav1.StatusReasonMethodNotAllowed, `post is not supported on resources of kind "pods"`},
		{"deleting an event is 405", "DELETE", "/api/v1/namespaces/default/events/x", 405, metav1.StatusReasonMethodNotAllowed, `delete is not supported on resources of kind "events"`},
		{"deleting an endpointslice is 405", "DELETE", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/x", 405, metav1.StatusReasonMethodNotAllowed, `delete is not supported`},
		{"logs without a LogSource are 405", "GET", "/api/v1/namespaces/default/pods/web/log", 405, metav1.StatusReasonMethodNotAllowed, `is not supported`},
		{"a bad label selector is 400", "GET", "/api/v1/pods?labelSelector=a%20in%20(", 400, metav1.StatusReasonBadRequest, `labelSelector "a in ("`},
		{"an unknown field label is 400 like the API server", "GET", "/api/v1/pods?fieldSelector=spec.foo%3Dx", 400, metav1.StatusReasonBadRequest, `field label not supported: spec.foo`},
		{"pod fields are not event fields", "GET", "/api/v1/events?fieldSelector=status.phase%3DRunning", 400, metav1.StatusReasonBadRequest, `field label not supported: status.phase`},
		{"a bad watch flag is 400", "GET", "/api/v1/pods?watch=maybe", 400, metav1.StatusReasonBadRequest, `watch "maybe"`},
		{"a bad watch version is 400", "GET", "/api/v1/pods?watch=true&resourceVersion=x", 400, metav1.StatusReasonBadRequest, `invalid resource version "x"`},
		{"a future watch version is 504", "GET", "/api/v1/pods?watch=true&resourceVersion=99", 504, metav1.StatusReasonTimeout, `Too large resource version: 99, current: 1`},
		{"a negative timeout is 400", "GET", "/api/v1/pods?watch=true&timeoutSeconds=-1", 400, metav1.StatusReasonBadRequest, `timeoutSeconds "-1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := s.raw(t, tt.method, tt.path)
			st := decodeStatus(t, body)
			if int32(code) != tt.code || st.Code != tt.code || st.Reason != tt.reason || st.Status != metav1.StatusFailure {
				t.Errorf("HTTP %d, Status %d %s %s, want %d %s Failure", code, st.Code, st.Reason, st.Status, tt.code, tt.reason)
			}
			if !strings.Contains(st.Message, tt.message) {
				t.Errorf("message %q, want it to contain %q", st.Message, tt.message)
			}
		})
	}
}

func TestSelectorsFilterLists(t *testing.T) {
	s := startServer(t, Config{})
	s.createPod(t, testPod("default", "a", map[string]string{"app": "web", "tier": "front"}))
	s.createPod(t, testPod("default", "b", map[string]string{"app": "web"}))
	s.createPod(t, testPod("default", "c", map[string]string{"app": "db"}))
	s.createPod(t, testPod("prod", "d", map[string]string{"app": "web"}))
	s.createPod(t, testPod("default", "e", nil))
	s.store.Pods.Modify("default", "b", func(p *corev1.Pod) error { p.Status.Phase = corev1.PodRunning; return nil })

	tests := []struct {
		name string
		ns   string
		opts metav1.ListOptions
		want string
	}{
		{"no selector lists every namespace in order", "", metav1.ListOptions{}, "a,b,c,e,d"},
		{"a namespace limits the list", "prod", metav1.ListOptions{}, "d"},
		{"label equality", "", metav1.ListOptions{LabelSelector: "app=web"}, "a,b,d"},
		{"label set and namespace", "default", metav1.ListOptions{LabelSelector: "app in (web,db),!tier"}, "b,c"},
		{"label absence", "", metav1.ListOptions{LabelSelector: "!app"}, "e"},
		{"field metadata.name", "", metav1.ListOptions{FieldSelector: "metadata.name=c"}, "c"},
		{"field inequality", "", metav1.ListOptions{FieldSelector: "metadata.namespace!=default"}, "d"},
		{"field status.phase", "", metav1.ListOptions{FieldSelector: "status.phase=Running"}, "b"},
		{"labels and fields together", "", metav1.ListOptions{LabelSelector: "app=web", FieldSelector: "metadata.name!=a"}, "b,d"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := s.client.CoreV1().Pods(tt.ns).List(t.Context(), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(l.Items); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
			if l.ResourceVersion != "6" {
				t.Errorf("list resourceVersion %q, want 6", l.ResourceVersion)
			}
		})
	}
}

func TestEventFieldSelectorsMatchTheInvolvedObject(t *testing.T) {
	s := startServer(t, Config{})
	for i, pod := range []string{"web", "db", "web"} {
		s.store.Events.Create(&corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: "default", Name: pod + "." + string(rune('a'+i))},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: pod, FieldPath: "spec.containers{app}"},
			Reason:         []string{"Started", "Killing", "Unhealthy"}[i],
			Type:           []string{"Normal", "Normal", "Warning"}[i],
			Source:         corev1.EventSource{Component: "kubelet"},
		})
	}
	l, err := s.client.CoreV1().Events("").List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.name=web,type=Warning,source=kubelet"})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 1 || l.Items[0].Reason != "Unhealthy" {
		t.Errorf("got %+v", l.Items)
	}
}

func TestTypedListHelpersDecodeEachKind(t *testing.T) {
	s := startServer(t, Config{})
	s.store.EndpointSlices.Create(&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-x"}, AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"127.0.1.1"}}}})
	s.store.Services.Create(&servingv1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hello"},
		Status: servingv1.ServiceStatus{URL: "http://hello.default.example.com"}})
	eps, err := s.client.DiscoveryV1().EndpointSlices("").List(t.Context(), metav1.ListOptions{})
	if err != nil || len(eps.Items) != 1 || eps.Items[0].Endpoints[0].Addresses[0] != "127.0.1.1" {
		t.Errorf("endpointslices: %+v %v", eps, err)
	}
	svcs, err := s.client.Serving.Services("").List(t.Context(), metav1.ListOptions{})
	if err != nil || len(svcs.Items) != 1 || svcs.Items[0].Status.URL != "http://hello.default.example.com" || svcs.Items[0].Kind != "Service" {
		t.Errorf("services: %+v %v", svcs, err)
	}
}

// TestShutdownDoesNotWaitForASpareConnection: a client that dialed a
// connection it never used (client-go dials spares) neither fails the
// shutdown nor holds it for net/http's 5 s grace of new connections.
func TestShutdownDoesNotWaitForASpareConnection(t *testing.T) {
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- NewServer(Config{Store: objstore.New(objstore.Options{})}).Serve(ctx, ln) }()
	spare, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer spare.Close()
	// The server has accepted it once a request on another connection is answered.
	resp, err := http.Get("http://" + ln.Addr().String() + "/version")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Serve still shutting down after 3 s: it waits for the spare connection")
	}
}
