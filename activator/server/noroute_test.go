package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// TestUnroutableServiceGets503AndARateLimitedNoRouteEvent: a Service
// whose pods have no gate and that has two ports, none named http,
// cannot be routed. Its requests get 503 with the reason at once (not a
// hold until the timeout), and the activator, as kube/deploy/base's
// service account, records a Warning Event NoRoute on the Service (its
// UID from the slice's owner reference), at most once a minute.
// noRouteRuns numbers the runs of the test below.
var noRouteRuns atomic.Int32

func TestUnroutableServiceGets503AndARateLimitedNoRouteEvent(t *testing.T) {
	e := sharedEnv(t)
	ctx := t.Context()
	// A name of its own each run: the shared API server keeps the last
	// run's Events (and the log its lines) under -count.
	name := fmt.Sprintf("twoports-%d", noRouteRuns.Add(1))
	svc, err := e.cs.CoreV1().Services(testNS).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
			{Name: "a", Port: 80, TargetPort: intstr.FromInt32(8080)},
			{Name: "b", Port: 81, TargetPort: intstr.FromInt32(8081)},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A pod without a gate that no node can take (it stays Pending): the
	// activator reads its spec, nothing runs it.
	pod, err := e.cs.CoreV1().Pods(testNS).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-plain"},
		Spec:       corev1.PodSpec{NodeSelector: map[string]string{"podgate.dev/test": "no-such-node"}, Containers: []corev1.Container{{Name: "app", Image: "app"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tcp := ptr.To(corev1.ProtocolTCP)
	if _, err := e.cs.DiscoveryV1().EndpointSlices(testNS).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-1", Labels: map[string]string{
			discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: mirrorManager,
		}, OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: name, UID: svc.UID, Controller: ptr.To(true)}}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports: []discoveryv1.EndpointPort{
			{Name: ptr.To("a"), Port: ptr.To[int32](8080), Protocol: tcp},
			{Name: ptr.To("b"), Port: ptr.To[int32](8081), Protocol: tcp},
		},
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{"10.244.99.1"},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: testNS, Name: pod.Name, UID: pod.UID},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The test's context is done by now.
		ctx := context.Background()
		_ = e.cs.DiscoveryV1().EndpointSlices(testNS).Delete(ctx, name+"-1", metav1.DeleteOptions{})
		_ = e.cs.CoreV1().Pods(testNS).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		_ = e.cs.CoreV1().Services(testNS).Delete(ctx, name, metav1.DeleteOptions{})
	})
	clk := clocktesting.NewFakeClock(time.Now())
	s, stop, err := e.startActivator(Config{ServiceEvents: true, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	c := client(t)
	host := name + "." + testNS + ".example.com"
	reason := `cannot route Service shop/` + name + `: its pods have no podgate gate, and it has 2 ports (a, b) and none is named "http"`
	refused := func(t *testing.T) {
		t.Helper()
		begin := time.Now()
		code, body, err := get(c, s, host)
		if err != nil || code != http.StatusServiceUnavailable || !strings.Contains(body, reason) {
			t.Fatalf("GET %s: %d %q %v; want 503 with %q", host, code, body, err, reason)
		}
		// The request timeout is a minute: a hold would show.
		if took := time.Since(begin); took > 5*time.Second {
			t.Errorf("503 after %s, want at once", took)
		}
	}
	recorded := func() int {
		return strings.Count(e.log.String(), `msg="recorded an Event on the Service" target=shop/`+name+" ")
	}
	// count is the Event's count once it is there and has it.
	count := func(t *testing.T, want int32) {
		t.Helper()
		sel := fields.Set{"involvedObject.name": name, "involvedObject.kind": "Service", "reason": ReasonNoRoute}.AsSelector().String()
		var last string
		if err := poll(30*time.Second, func() (bool, error) {
			evs, err := e.cs.CoreV1().Events(testNS).List(ctx, metav1.ListOptions{FieldSelector: sel})
			if err != nil {
				return false, err
			}
			last = fmt.Sprintf("%+v", evs.Items)
			return len(evs.Items) == 1 && evs.Items[0].Count == want && evs.Items[0].InvolvedObject.UID == svc.UID &&
				evs.Items[0].Type == corev1.EventTypeWarning && strings.HasPrefix(evs.Items[0].Message, reason) &&
				evs.Items[0].Source.Component == EventComponent, nil
		}); err != nil {
			t.Fatalf("one NoRoute Event on the Service, count %d: %v; last %s", want, err, last)
		}
	}

	t.Run("503 with the reason at once, and an Event on the Service", func(t *testing.T) {
		refused(t)
		count(t, 1)
	})
	t.Run("within the minute, more refusals record nothing more", func(t *testing.T) {
		for range 5 {
			refused(t)
		}
		clk.Step(noRouteInterval - time.Second)
		refused(t)
		// The activator logs each Event it records, when it records it.
		if n := recorded(); n != 1 {
			t.Errorf("%d Events recorded, want 1 within the minute", n)
		}
		count(t, 1)
	})
	t.Run("a minute later, the next refusal records it again (the count goes up)", func(t *testing.T) {
		clk.Step(time.Second)
		refused(t)
		count(t, 2)
		if n := recorded(); n != 2 {
			t.Errorf("%d Events recorded, want 2", n)
		}
	})
}
