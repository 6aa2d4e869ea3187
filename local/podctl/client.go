package podctl

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/local/servingv1"
)

// Client is client-go on the control API of a running `podgate run`: the
// typed clientset for pods, events and EndpointSlices, and Serving for
// Knative's Services.
type Client struct {
	kubernetes.Interface
	Serving *servingv1.Client
	addr    string // as the user gave it, for messages
	tr      *http.Transport
}

// NewClient returns a client for addr: HOST:PORT or an http:// URL.
func NewClient(addr string) (*Client, error) {
	raw := addr
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("control API address %q: want HOST:PORT or http://HOST:PORT (e.g. %s)", addr, contract.APIAddr)
	}
	// Its own transport: no proxy from the environment (the API is on
	// loopback), and Close can drop its idle connections, which
	// client-go's shared transports would keep.
	tr := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4}
	hc := &http.Client{Transport: tr}
	// No client-side rate limit: client-go's default (5 requests a
	// second) spares a shared cluster, and would only slow down the polls
	// of one user's local API.
	cfg := &rest.Config{Host: "http://" + u.Host, QPS: -1, UserAgent: "podgate"}
	cs, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("control API client for %s: %w", addr, err)
	}
	sv, err := servingv1.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("control API client for %s: %w", addr, err)
	}
	return &Client{Interface: cs, Serving: sv, addr: addr, tr: tr}, nil
}

// Close releases idle connections. Streams already returned stay open
// until closed.
func (c *Client) Close() { c.tr.CloseIdleConnections() }

// UnreachableError means nothing answered at the control API address.
type UnreachableError struct {
	Addr string
	Err  error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach podgate at %s: is 'podgate run' running?", e.Addr)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// reached turns client-go's error for a refused connection into an
// UnreachableError: the user's mistake is most likely that `podgate run`
// is not running, and client-go's message (the request's URL and the
// socket's error) does not say so.
func (c *Client) reached(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return &UnreachableError{Addr: c.addr, Err: err}
	}
	return err
}
