package cluster

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// gatelessBound is how long a plain Deployment may take from its apply
// to its first 200 through the front door: its pod starts (the test app,
// ready in well under a second), the EndpointSlice turns ready, the
// activator routes. A hang on the gate's port (what the front door did
// before) never gets there.
const gatelessBound = 90 * time.Second

// TestFrontDoorServesPodsWithoutAGate runs `podgate cluster up` and
// applies, in a namespace that did not opt in to injection, a plain
// Deployment and a Service whose targetPort names the container's port:
// the front door routes to the pods' own port, not to a gate's :8012
// where nothing listens. Services of the same pods that cannot be routed
// (two ports, none named http; headless without ports) get a 503 saying
// why at once, and a NoRoute Event on the Service.
func TestFrontDoorServesPodsWithoutAGate(t *testing.T) {
	u := startInstalled(t, "10.250.232.0/24")
	ctx := t.Context()
	u.namespace(t, "plain", nil)

	spec := testappSpec(false)
	spec.Containers[0].Ports[0].Name = "serve"
	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "plain"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
	svc := func(name string, ports ...corev1.ServicePort) *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "plain"},
			Spec:       corev1.ServiceSpec{Selector: labels, Ports: ports},
		}
	}
	web := svc("web", corev1.ServicePort{Name: "web", Port: 80, TargetPort: intstr.FromString("serve")})
	twoPorts := svc("twoports",
		corev1.ServicePort{Name: "a", Port: 80, TargetPort: intstr.FromInt32(8080)},
		corev1.ServicePort{Name: "b", Port: 81, TargetPort: intstr.FromInt32(8080)})
	headless := svc("noports")
	headless.Spec.ClusterIP = corev1.ClusterIPNone

	begin := time.Now()
	if _, err := u.client.AppsV1().Deployments("plain").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*corev1.Service{web, twoPorts, headless} {
		created, err := u.client.CoreV1().Services("plain").Create(ctx, s, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.UID = created.UID
	}
	// Each request bounded well below the activator's 300 s timeout: a
	// hang fails the request, not the whole test's deadline.
	get := func(host string) (int, string, time.Duration, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.frontDoor+"/", nil)
		if err != nil {
			return 0, "", 0, err
		}
		req.Host = host
		c := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}, Timeout: 10 * time.Second}
		sent := time.Now()
		resp, err := c.Do(req)
		if err != nil {
			return 0, "", time.Since(sent), err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b)), time.Since(sent), err
	}

	t.Run("a plain Deployment's Service answers 200 through the front door, on the container's named port", func(t *testing.T) {
		eventually(t, gatelessBound, "web.plain answering 200", func() (bool, string) {
			code, body, _, err := get("web.plain.example.com")
			return err == nil && code == http.StatusOK, fmt.Sprintf("%d %q %v", code, body, err)
		})
		t.Logf("plain Deployment applied → first 200 through the front door: %s", time.Since(begin).Round(time.Millisecond))
		pods, err := u.client.CoreV1().Pods("plain").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
				if c.Name != "app" {
					t.Errorf("pod %s has container %q: the namespace did not opt in, it should not be injected", p.Name, c.Name)
				}
			}
		}
	})

	for _, tc := range []struct {
		svc  *corev1.Service
		want string
	}{
		{twoPorts, `none is named "http"`},
		{headless, "no TCP port"},
	} {
		t.Run("Service "+tc.svc.Name+" cannot be routed: 503 with the reason at once, and a NoRoute Event on it", func(t *testing.T) {
			host := tc.svc.Name + ".plain.example.com"
			// Once its endpoint is listed: before, the front door does not
			// know the Service (404) or holds for the pod to come.
			eventually(t, waitLimit, host+" answering 503", func() (bool, string) {
				code, body, took, err := get(host)
				return err == nil && code == http.StatusServiceUnavailable && strings.Contains(body, tc.want),
					fmt.Sprintf("%d %q after %s, %v", code, body, took.Round(time.Millisecond), err)
			})
			code, body, took, err := get(host)
			if err != nil || code != http.StatusServiceUnavailable || !strings.Contains(body, tc.want) || took > 2*time.Second {
				t.Errorf("again: %d %q after %s, %v; want 503 with %q at once", code, body, took, err, tc.want)
			}
			t.Logf("%s: %d %q in %s", host, code, body, took.Round(time.Millisecond))
			sel := fields.Set{"involvedObject.kind": "Service", "involvedObject.name": tc.svc.Name, "reason": "NoRoute"}.AsSelector().String()
			eventually(t, 30*time.Second, "a NoRoute Event on Service "+tc.svc.Name, func() (bool, string) {
				evs, err := u.client.CoreV1().Events("plain").List(ctx, metav1.ListOptions{FieldSelector: sel})
				if err != nil {
					return false, err.Error()
				}
				for _, e := range evs.Items {
					if e.Type == corev1.EventTypeWarning && e.InvolvedObject.UID == tc.svc.UID && strings.Contains(e.Message, tc.want) {
						return true, ""
					}
				}
				return false, fmt.Sprintf("%d events: %+v", len(evs.Items), evs.Items)
			})
		})
	}
}
