package controlplane

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
)

// pollEvery is how often readiness is checked.
const pollEvery = 100 * time.Millisecond

func netipAddr(s string) netip.Addr {
	a, _ := netip.ParseAddr(s)
	return a
}

// waitFor polls check until it reports done, ctx ends, or a component
// exits (an error naming it, with the end of its log). what names the
// wait in a timeout; last is the last reason check gave for not done.
func (c *ControlPlane) waitFor(ctx context.Context, what string, check func(context.Context) (done bool, why string)) error {
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	last := "not checked yet"
	for {
		if err := c.exitedComponent(); err != nil {
			return err
		}
		done, why := check(ctx)
		if done {
			return nil
		}
		last = why
		select {
		case <-ctx.Done():
			return fmt.Errorf("controlplane: waiting for %s: %w (last: %s)", what, context.Cause(ctx), last)
		case <-t.C:
		}
	}
}

// exitedComponent reports the first component that is no longer running.
func (c *ControlPlane) exitedComponent() error {
	c.mu.Lock()
	comps := append([]*component(nil), c.comps...)
	c.mu.Unlock()
	for _, comp := range comps {
		select {
		case <-comp.proc.Done():
			return comp.exited()
		default:
		}
	}
	return nil
}

// healthClient talks to the components over TLS verified by the cluster
// CA, presenting the admin certificate.
func (c *ControlPlane) healthClient() (*http.Client, error) {
	tlsCfg, err := rest.TLSConfigFor(c.AdminConfig())
	if err != nil {
		return nil, fmt.Errorf("controlplane: TLS config: %w", err)
	}
	return &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: tlsCfg, DisableKeepAlives: true},
	}, nil
}

// get returns whether url answered 200 and why not.
func get(ctx context.Context, hc *http.Client, url string) (bool, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err.Error()
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Sprintf("%s: %s: %s", url, resp.Status, body)
	}
	return true, ""
}

// waitAPIServer waits for the API server's /readyz: etcd reached, the
// bootstrap RBAC policy and the system namespaces in place.
func (c *ControlPlane) waitAPIServer(ctx context.Context) error {
	hc, err := c.healthClient()
	if err != nil {
		return err
	}
	defer hc.CloseIdleConnections()
	return c.waitFor(ctx, "kube-apiserver /readyz", func(ctx context.Context) (bool, string) {
		return get(ctx, hc, c.url+"/readyz")
	})
}

// waitControllers waits for the controller manager's and the scheduler's
// /healthz.
func (c *ControlPlane) waitControllers(ctx context.Context) error {
	hc, err := c.healthClient()
	if err != nil {
		return err
	}
	defer hc.CloseIdleConnections()
	for name, port := range map[string]int{KubeControllerManager: c.ports.controllerManager, KubeScheduler: c.ports.scheduler} {
		url := "https://127.0.0.1:" + strconv.Itoa(port) + "/healthz"
		if err := c.waitFor(ctx, name+" /healthz", func(ctx context.Context) (bool, string) {
			return get(ctx, hc, url)
		}); err != nil {
			return err
		}
	}
	return nil
}

// waitDefaultServiceAccount waits for the service-account controller to
// make the `default` ServiceAccount of namespace default: until then the
// API server rejects every pod there (serviceaccount "default" not found).
func (c *ControlPlane) waitDefaultServiceAccount(ctx context.Context) error {
	cfg := c.AdminConfig()
	cfg.Timeout = 5 * time.Second
	client, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("controlplane: client: %w", err)
	}
	return c.waitFor(ctx, `ServiceAccount "default" in namespace default`, func(ctx context.Context) (bool, string) {
		_, err := client.ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		switch {
		case err == nil:
			return true, ""
		case apierrors.IsNotFound(err):
			return false, "not created yet"
		}
		return false, err.Error()
	})
}
