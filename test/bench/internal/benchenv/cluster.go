package benchenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// PollEvery is how often Poll asks.
const PollEvery = 20 * time.Millisecond

// Poll calls cond until it holds, limit passes, ctx ends or exited (the
// cluster process's end; nil for none) delivers.
func Poll(ctx context.Context, what string, limit time.Duration, exited <-chan error, cond func() (bool, error)) error {
	deadline := time.Now().Add(limit)
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
		case <-time.After(PollEvery):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %s (last error: %v)", what, limit, last)
		}
	}
}

// WaitNodeReady waits for DIR/kubeconfig of a `podgate cluster up`, then
// for a Ready Node through it (the host's forward), and returns a client
// of the cluster's admin.
func WaitNodeReady(ctx context.Context, dir string, limit time.Duration, exited <-chan error) (*kubernetes.Clientset, error) {
	path := filepath.Join(dir, "kubeconfig")
	var k *kubernetes.Clientset
	err := Poll(ctx, "node Ready", limit, exited, func() (bool, error) {
		if k == nil {
			if _, err := os.Stat(path); err != nil {
				return false, err
			}
			rc, err := clientcmd.BuildConfigFromFlags("", path)
			if err != nil {
				return false, err
			}
			rc.QPS, rc.Burst = 100, 200
			if k, err = kubernetes.NewForConfig(rc); err != nil {
				return false, err
			}
		}
		nodes, err := k.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
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
	return k, err
}

// WaitFrontDoor waits until cluster up's log says where its front door
// is: podgate is installed, the webhook and the activator ready.
func WaitFrontDoor(ctx context.Context, log string, limit time.Duration, exited <-chan error) error {
	return Poll(ctx, "front door ready", limit, exited, func() (bool, error) {
		b, err := os.ReadFile(log)
		return err == nil && strings.Contains(string(b), "podgate: front door on http://"), err
	})
}

// knativeLine is what `cluster up --knative` prints once the Knative
// stack (kube-proxy, CoreDNS, Knative Serving, Traefik) is ready: the
// host's loopback address forwarded to the ingress. The newline makes
// sure the port was written whole.
var knativeLine = regexp.MustCompile(`podgate: Knative ingress \(Traefik\) on (http://127(?:\.\d+){3}:\d+)\n`)

// WaitKnativeIngress waits until cluster up's log says the Knative stack
// is ready and returns the ingress's URL (http://127.0.0.1:PORT).
func WaitKnativeIngress(ctx context.Context, log string, limit time.Duration, exited <-chan error) (string, error) {
	var ingress string
	err := Poll(ctx, "Knative ready", limit, exited, func() (bool, error) {
		b, err := os.ReadFile(log)
		if err != nil {
			return false, err
		}
		m := knativeLine.FindSubmatch(b)
		if m == nil {
			return false, nil
		}
		ingress = string(m[1])
		return true, nil
	})
	return ingress, err
}
