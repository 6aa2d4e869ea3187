package readiness

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

	"github.com/podgate/podgate/probe"
)

// h2cProber is the HTTP/2 half of ENABLE_HTTP2_AUTO_DETECTION: the probe's
// GET sent as HTTP/2 with prior knowledge (h2c), as queue-proxy tries it
// before HTTP/1.1. A container that speaks only h2c closes an HTTP/1.1
// connection unanswered, so without this it can never be ready.
type h2cProber struct {
	client    http.Client
	userAgent string
}

func newH2CProber(userAgent string) *h2cProber {
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	return &h2cProber{
		userAgent: userAgent,
		client: http.Client{
			Transport: &http.Transport{
				Protocols: &protos,
				// A fresh connection per attempt, as the kubelet's probes.
				DisableKeepAlives:  true,
				DisableCompression: true,
			},
			// A redirect counts as it does for the kubelet: passed, with a
			// warning (queue-proxy takes any 2xx or 3xx).
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// attempt makes one h2c attempt of h against host (the probe's own host
// wins), with the kubelet's request headers and verdicts.
func (p *h2cProber) attempt(ctx context.Context, h *corev1.HTTPGetAction, host string, timeout time.Duration) probe.Outcome {
	start := time.Now()
	out := probe.Outcome{Attempts: 1}
	out.Result, out.Message = p.do(ctx, h, host, timeout)
	out.Duration = time.Since(start)
	return out
}

func (p *h2cProber) do(ctx context.Context, h *corev1.HTTPGetAction, host string, timeout time.Duration) (probe.Result, string) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if h.Host != "" {
		host = h.Host
	}
	u, err := url.Parse(h.Path)
	if err != nil {
		u = &url.URL{Path: h.Path}
	}
	u.Scheme = "http"
	u.Host = net.JoinHostPort(host, strconv.Itoa(h.Port.IntValue()))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return probe.Failure, err.Error()
	}
	for _, hd := range h.HTTPHeaders {
		req.Header.Add(hd.Name, hd.Value)
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header.Set("User-Agent", p.userAgent)
	}
	if _, ok := req.Header["Accept"]; !ok {
		req.Header.Set("Accept", "*/*")
	}
	req.Host = req.Header.Get("Host")
	resp, err := p.client.Do(req)
	if err != nil {
		return probe.Failure, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, probe.MaxHTTPBody))
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return probe.Success, ""
	case code >= 300 && code < 400:
		return probe.Warning, "Probe terminated redirects, Response body: " + string(body)
	default:
		return probe.Failure, fmt.Sprintf("HTTP probe failed with statuscode: %d", code)
	}
}

// isPlainHTTP: an httpGet probe without TLS, which auto-detection may try
// as h2c.
func isPlainHTTP(p *corev1.Probe) bool {
	return p != nil && p.HTTPGet != nil && (p.HTTPGet.Scheme == "" || strings.EqualFold(string(p.HTTPGet.Scheme), "http"))
}
