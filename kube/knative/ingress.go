package knative

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podgate/podgate/node/netns"
)

// ServeIngress forwards the connections of ln (the host's loopback port,
// passed into the cluster's network namespace) to the ingress Service's
// ClusterIP, port IngressPort, until ctx ends: kube-proxy routes them on
// to Traefik's pods, as a NodePort or a cloud load balancer would on a
// real cluster. The ClusterIP is read with rc once the Service exists
// (it never changes); until then a connection is closed.
func ServeIngress(ctx context.Context, ln net.Listener, rc *rest.Config, log *slog.Logger) error {
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("ingress forward: %w", err)
	}
	var (
		mu     sync.Mutex
		target string
	)
	pick := func() (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if target != "" {
			return target, nil
		}
		svc, err := cs.CoreV1().Services(IngressNamespace).Get(ctx, IngressService, metav1.GetOptions{})
		if err != nil {
			return "", fmt.Errorf("ingress Service %s/%s: %w", IngressNamespace, IngressService, err)
		}
		if ip := svc.Spec.ClusterIP; ip != "" && ip != "None" {
			target = net.JoinHostPort(ip, strconv.Itoa(IngressPort))
			return target, nil
		}
		return "", fmt.Errorf("ingress Service %s/%s has no ClusterIP", IngressNamespace, IngressService)
	}
	fw := &netns.Forwarder{Pick: pick, Log: log}
	return fw.Serve(ctx, ln)
}
