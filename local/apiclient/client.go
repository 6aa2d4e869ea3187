package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/local/apiserver/resources"
	"github.com/podgate/podgate/local/servingv1"
)

// Client talks to the control API of a running `podgate run`.
type Client struct {
	addr string // as the user gave it, for messages
	base url.URL
	tr   *http.Transport
	hc   *http.Client
}

// New returns a client for addr: HOST:PORT or an http:// URL.
func New(addr string) (*Client, error) {
	raw := addr
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("control API address %q: want HOST:PORT or http://HOST:PORT (e.g. %s)", addr, contract.APIAddr)
	}
	u.Path = ""
	// Its own transport: no proxy from the environment (the API is on
	// loopback), and Close can drop its idle connections.
	tr := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4}
	return &Client{addr: addr, base: *u, tr: tr, hc: &http.Client{Transport: tr}}, nil
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

// ListOptions select what List and Watch return.
type ListOptions struct {
	// Namespace limits the request to one namespace; "" is all namespaces.
	Namespace     string
	LabelSelector string
	FieldSelector string
	// ResourceVersion: for Watch, the version to start after (a List's
	// metadata.resourceVersion); "" starts with the current objects.
	ResourceVersion string
	// TimeoutSeconds ends a Watch server-side after this long; 0 never.
	TimeoutSeconds int64
}

func (o ListOptions) query(watch bool) url.Values {
	q := url.Values{}
	if o.LabelSelector != "" {
		q.Set("labelSelector", o.LabelSelector)
	}
	if o.FieldSelector != "" {
		q.Set("fieldSelector", o.FieldSelector)
	}
	if o.ResourceVersion != "" {
		q.Set("resourceVersion", o.ResourceVersion)
	}
	if watch {
		q.Set("watch", "true")
		if o.TimeoutSeconds > 0 {
			q.Set("timeoutSeconds", strconv.FormatInt(o.TimeoutSeconds, 10))
		}
	}
	return q
}

// List decodes the resource's list (PodList, EventList, …) into into.
func (c *Client) List(ctx context.Context, r resources.Resource, opts ListOptions, into any) error {
	return c.getJSON(ctx, r, opts.Namespace, "", opts.query(false), into)
}

// Get decodes one object into into; a missing object is a NotFound
// StatusError (apierrors.IsNotFound).
func (c *Client) Get(ctx context.Context, r resources.Resource, namespace, name string, into any) error {
	return c.getJSON(ctx, r, namespace, name, nil, into)
}

// ListPods lists pods.
func (c *Client) ListPods(ctx context.Context, opts ListOptions) (*corev1.PodList, error) {
	var l corev1.PodList
	return &l, c.List(ctx, resources.Pods, opts, &l)
}

// GetPod reads one pod.
func (c *Client) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	var p corev1.Pod
	return &p, c.Get(ctx, resources.Pods, namespace, name, &p)
}

// ListEvents lists events.
func (c *Client) ListEvents(ctx context.Context, opts ListOptions) (*corev1.EventList, error) {
	var l corev1.EventList
	return &l, c.List(ctx, resources.Events, opts, &l)
}

// ListEndpointSlices lists EndpointSlices.
func (c *Client) ListEndpointSlices(ctx context.Context, opts ListOptions) (*discoveryv1.EndpointSliceList, error) {
	var l discoveryv1.EndpointSliceList
	return &l, c.List(ctx, resources.EndpointSlices, opts, &l)
}

// ListServices lists Knative Services.
func (c *Client) ListServices(ctx context.Context, opts ListOptions) (*servingv1.ServiceList, error) {
	var l servingv1.ServiceList
	return &l, c.List(ctx, resources.Services, opts, &l)
}

// DeletePod starts graceful termination of a pod and returns the pod as it
// is then (deletionTimestamp set), or nil if it is already gone.
func (c *Client) DeletePod(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) (*corev1.Pod, error) {
	opts.TypeMeta = metav1.TypeMeta{Kind: "DeleteOptions", APIVersion: "v1"}
	body, err := json.Marshal(opts)
	if err != nil {
		return nil, fmt.Errorf("encoding DeleteOptions: %w", err)
	}
	resp, err := c.do(ctx, http.MethodDelete, resources.Pods.Path(namespace, name), nil, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if err := checkResponse(resp, http.MethodDelete, resources.Pods, name); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading delete response: %w", err)
	}
	var kind metav1.TypeMeta
	if err := json.Unmarshal(data, &kind); err != nil {
		return nil, fmt.Errorf("decoding delete response: %w", err)
	}
	if kind.Kind == "Status" {
		return nil, nil
	}
	var p corev1.Pod
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("decoding deleted pod: %w", err)
	}
	return &p, nil
}

// Logs streams a container's output; with opts.Follow it stays open until
// the container stops, the server goes away or ctx is done. Close it.
func (c *Client) Logs(ctx context.Context, namespace, pod string, opts corev1.PodLogOptions) (io.ReadCloser, error) {
	q := url.Values{}
	if opts.Container != "" {
		q.Set("container", opts.Container)
	}
	for name, on := range map[string]bool{"follow": opts.Follow, "previous": opts.Previous, "timestamps": opts.Timestamps} {
		if on {
			q.Set(name, "true")
		}
	}
	for name, v := range map[string]*int64{"tailLines": opts.TailLines, "sinceSeconds": opts.SinceSeconds, "limitBytes": opts.LimitBytes} {
		if v != nil {
			q.Set(name, strconv.FormatInt(*v, 10))
		}
	}
	resp, err := c.do(ctx, http.MethodGet, resources.Pods.Path(namespace, pod)+"/log", q, nil)
	if err != nil {
		return nil, err
	}
	if err := checkResponse(resp, http.MethodGet, resources.Pods, pod); err != nil {
		resp.Body.Close()
		return nil, err
	}
	return resp.Body, nil
}

func (c *Client) getJSON(ctx context.Context, r resources.Resource, namespace, name string, q url.Values, into any) error {
	resp, err := c.do(ctx, http.MethodGet, r.Path(namespace, name), q, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := checkResponse(resp, http.MethodGet, r, name); err != nil {
		return err
	}
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		return fmt.Errorf("decoding %s from %s: %w", r.Plural, c.addr, err)
	}
	return nil
}

func (c *Client) do(ctx context.Context, method, path string, q url.Values, body io.Reader) (*http.Response, error) {
	u := c.base
	u.Path = path
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("control API request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return nil, &UnreachableError{Addr: c.addr, Err: err}
		}
		return nil, fmt.Errorf("control API at %s: %w", c.addr, err)
	}
	return resp, nil
}

// checkResponse turns a non-2xx answer into the StatusError the server
// sent, or one made up from the status code if the body is not a Status.
func checkResponse(resp *http.Response, method string, r resources.Resource, name string) error {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var st metav1.Status
	if json.Unmarshal(body, &st) == nil && st.Kind == "Status" {
		return &apierrors.StatusError{ErrStatus: st}
	}
	return apierrors.NewGenericServerResponse(resp.StatusCode, strings.ToLower(method), r.GroupResource(), name, strings.TrimSpace(string(body)), 0, true)
}
