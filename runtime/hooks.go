package runtime

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
)

// ReasonFailedPreStopHook is the event of a preStop hook that failed; the
// kill goes on regardless, as the kubelet's does.
const ReasonFailedPreStopHook = "FailedPreStopHook"

// runPreStop runs c's preStop handler until it finishes or ctx ends (the
// grace period is over, the process exited, or the kill was forced).
func (p *pod) runPreStop(ctx context.Context, c *container, h *corev1.LifecycleHandler) {
	var err error
	switch {
	case h.Exec != nil:
		err = p.execHook(ctx, c, h.Exec)
	case h.HTTPGet != nil:
		err = p.httpHook(ctx, c, h.HTTPGet)
	case h.Sleep != nil:
		err = p.sleepHook(ctx, time.Duration(h.Sleep.Seconds)*time.Second)
	default:
		return // tcpSocket hooks are deprecated and ignored by the kubelet too
	}
	if err != nil && ctx.Err() == nil {
		p.record(c, corev1.EventTypeWarning, ReasonFailedPreStopHook, "PreStopHook failed: "+err.Error())
	}
}

func (p *pod) execHook(ctx context.Context, c *container, e *corev1.ExecAction) error {
	lookup := func(name string) (string, bool) {
		// As for exec probes, only static env values expand.
		for i := len(c.spec.Env) - 1; i >= 0; i-- {
			if c.spec.Env[i].Name == name {
				return c.spec.Env[i].Value, true
			}
		}
		return "", false
	}
	argv := make([]string, len(e.Command))
	for i, a := range e.Command {
		argv[i] = expandVars(a, lookup)
	}
	out, code, err := c.exec.Exec(ctx, argv)
	switch {
	case err != nil:
		return fmt.Errorf("exec %q: %w", argv, err)
	case code != 0:
		return fmt.Errorf("exec %q: exit code %d: %s", argv, code, strings.TrimSpace(string(out)))
	}
	return nil
}

func (p *pod) httpHook(ctx context.Context, c *container, g *corev1.HTTPGetAction) error {
	port, err := resolvePort(g.Port, c.spec.Ports)
	if err != nil {
		return err
	}
	host := g.Host
	if host == "" {
		host = p.ip.String()
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
		return err
	}
	for _, h := range g.HTTPHeaders {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 10<<10))
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return fmt.Errorf("GET %s: HTTP %d", u, resp.StatusCode)
	}
	return nil
}

func (p *pod) sleepHook(ctx context.Context, d time.Duration) error {
	t := p.a.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
	case <-ctx.Done():
	}
	return nil
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
