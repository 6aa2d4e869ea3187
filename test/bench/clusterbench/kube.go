package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// pollEvery is how often the API server is asked.
const pollEvery = 20 * time.Millisecond

type client struct{ k *kubernetes.Clientset }

// poll calls cond until it holds, the wait limit passes, ctx ends or the
// cluster process exits.
func poll(ctx context.Context, what string, exited <-chan error, cond func() (bool, error)) error {
	deadline := time.Now().Add(waitLimit)
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case err := <-exited:
			return fmt.Errorf("%s: cluster up exited: %v", what, err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollEvery):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %s (last error: %v)", what, waitLimit, last)
		}
	}
}

// waitNodeReady waits for DIR/kubeconfig, then for a Ready Node through
// it (the host's forward).
func waitNodeReady(ctx context.Context, dir string, exited <-chan error) (*client, error) {
	path := filepath.Join(dir, "kubeconfig")
	var c *client
	err := poll(ctx, "node Ready", exited, func() (bool, error) {
		if c == nil {
			if _, err := os.Stat(path); err != nil {
				return false, err
			}
			rc, err := clientcmd.BuildConfigFromFlags("", path)
			if err != nil {
				return false, err
			}
			rc.QPS, rc.Burst = 100, 200
			k, err := kubernetes.NewForConfig(rc)
			if err != nil {
				return false, err
			}
			c = &client{k: k}
		}
		nodes, err := c.k.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, n := range nodes.Items {
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					return true, nil
				}
			}
		}
		return false, errors.New("no Ready node")
	})
	return c, err
}

// waitFrontDoor waits until cluster up's log says where its front door
// is: podgate is installed, the webhook and the activator ready.
func waitFrontDoor(ctx context.Context, log string, exited <-chan error) error {
	return poll(ctx, "front door ready", exited, func() (bool, error) {
		b, err := os.ReadFile(log)
		return err == nil && strings.Contains(string(b), "podgate: front door on http://"), err
	})
}

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
	err := poll(ctx, "2 ready endpoints", nil, func() (bool, error) {
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
