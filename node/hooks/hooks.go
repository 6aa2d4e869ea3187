package hooks

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"

	"github.com/podgate/podgate/internal/expansion"
	"github.com/podgate/podgate/probe"
)

// maxBody is how much of an HTTP hook's answer is read (and dropped), so
// the connection ends cleanly without reading an endless body.
const maxBody = 10 << 10

// Run runs h against the container target describes (its pod IP, ports,
// static env and exec context, as for its probes) until h finishes or ctx
// ends. clk times a sleep handler. It returns why the hook failed, if it
// did; a hook cut short by ctx returns what it got so far.
func Run(ctx context.Context, h *corev1.LifecycleHandler, target probe.Target, clk clock.Clock) error {
	switch {
	case h.Exec != nil:
		return execHook(ctx, target, h.Exec)
	case h.HTTPGet != nil:
		return httpHook(ctx, target, h.HTTPGet)
	case h.Sleep != nil:
		sleepHook(ctx, clk, time.Duration(h.Sleep.Seconds)*time.Second)
	}
	return nil // tcpSocket hooks are deprecated and ignored by the kubelet too
}

func execHook(ctx context.Context, target probe.Target, e *corev1.ExecAction) error {
	lookup := func(name string) (string, bool) {
		// As for exec probes, only static env values expand.
		for i := len(target.Env) - 1; i >= 0; i-- {
			if target.Env[i].Name == name {
				return target.Env[i].Value, true
			}
		}
		return "", false
	}
	argv := make([]string, len(e.Command))
	for i, a := range e.Command {
		argv[i] = expansion.Expand(a, lookup)
	}
	var exec probe.Executor = probe.HostExecutor{}
	if target.Exec != nil {
		exec = target.Exec
	}
	out, code, err := exec.Exec(ctx, argv)
	switch {
	case err != nil:
		return fmt.Errorf("exec %q: %w", argv, err)
	case code != 0:
		return fmt.Errorf("exec %q: exit code %d: %s", argv, code, strings.TrimSpace(string(out)))
	}
	return nil
}

func httpHook(ctx context.Context, target probe.Target, g *corev1.HTTPGetAction) error {
	req, err := hookRequest(ctx, target, g)
	if err != nil {
		return err
	}
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return fmt.Errorf("GET %s: HTTP %d", req.URL, resp.StatusCode)
	}
	return nil
}

// hookRequest builds the hook's GET: the hook's host or the pod IP, the
// port by number or container port name, the path with its query, and
// the hook's headers (a Host header sets the request's Host).
func hookRequest(ctx context.Context, target probe.Target, g *corev1.HTTPGetAction) (*http.Request, error) {
	port, err := resolvePort(g.Port, target.Ports)
	if err != nil {
		return nil, err
	}
	host := g.Host
	if host == "" {
		host = target.PodIP
	}
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := g.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u := &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port))}
	if pu, err := url.Parse(path); err == nil {
		u.Path, u.RawQuery = pu.Path, pu.RawQuery
	} else {
		u.Path = path
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	for _, h := range g.HTTPHeaders {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	return req, nil
}

func sleepHook(ctx context.Context, clk clock.Clock, d time.Duration) {
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
	case <-ctx.Done():
	}
}

// resolvePort turns a number or a named container port into a number.
func resolvePort(port intstr.IntOrString, ports []corev1.ContainerPort) (int, error) {
	if port.Type == intstr.Int {
		return port.IntValue(), nil
	}
	for _, cp := range ports {
		if cp.Name == port.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(port.StrVal); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("no container port named %q", port.StrVal)
}
