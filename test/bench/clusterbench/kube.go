package main

import (
	"context"
	"net/netip"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/podgate/podgate/test/bench/internal/benchenv"
)

type client struct{ k *kubernetes.Clientset }

// deployAndWait creates a Service and a Deployment of 2 test-app replicas
// and returns how long after the Deployment's creation both endpoints
// were ready at pod IPs of cidr.
func (c *client) deployAndWait(ctx context.Context, cidr string) (time.Duration, error) {
	labels := map[string]string{"app": "web"}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	if _, err := c.k.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return 0, err
	}
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "ghcr.io/podgate/testapp", Args: []string{"--port", "8080"}, ReadinessProbe: probe,
				}}},
			},
		},
	}
	begin := time.Now()
	if _, err := c.k.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		return 0, err
	}
	prefix := netip.MustParsePrefix(cidr)
	err := benchenv.Poll(ctx, "2 ready endpoints", waitLimit, nil, func() (bool, error) {
		list, err := c.k.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
		if err != nil {
			return false, err
		}
		n := 0
		for _, s := range list.Items {
			for _, ep := range s.Endpoints {
				a, err := netip.ParseAddr(ep.Addresses[0])
				if err == nil && prefix.Contains(a) && ep.Conditions.Ready != nil && *ep.Conditions.Ready {
					n++
				}
			}
		}
		return n == 2, nil
	})
	return time.Since(begin), err
}
