package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podgate/podgate/local/objstore"
	"github.com/podgate/podgate/local/podctl"
)

// testServer is a real control API on 127.0.0.1:0 over a real store.
type testServer struct {
	store  *objstore.Store
	addr   string
	client *podctl.Client
}

func startServer(t *testing.T, cfg Config) *testServer {
	t.Helper()
	if cfg.Store == nil {
		cfg.Store = objstore.New(objstore.Options{})
	}
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- NewServer(cfg).Serve(ctx, ln) }()
	c, err := podctl.NewClient(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return &testServer{store: cfg.Store, addr: ln.Addr().String(), client: c}
}

// raw does one plain HTTP request and returns the status and body.
func (s *testServer) raw(t *testing.T, method, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+s.addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	http.DefaultClient.CloseIdleConnections()
	return resp.StatusCode, string(body)
}

func (s *testServer) createPod(t *testing.T, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	out, err := s.store.Pods.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func testPod(ns, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}},
	}
}

func decodeStatus(t *testing.T, body string) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("body is not a Status: %v\n%s", err, body)
	}
	if st.Kind != "Status" || st.APIVersion != "v1" {
		t.Errorf("Status kind/apiVersion = %q/%q", st.Kind, st.APIVersion)
	}
	return st
}

// nextEvent reads one watch event with a generous deadline: a hang is a
// bug, not slowness. The end of the watch is io.EOF, an ERROR event its
// StatusError.
func nextEvent(t *testing.T, w watch.Interface) (watch.Event, error) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		switch {
		case !ok:
			return ev, io.EOF
		case ev.Type == watch.Error:
			return ev, apierrors.FromObject(ev.Object)
		}
		return ev, nil
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event within 10s")
	}
	panic("unreachable")
}

func mustNext(t *testing.T, w watch.Interface) (string, *corev1.Pod) {
	t.Helper()
	ev, err := nextEvent(t, w)
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	p, ok := ev.Object.(*corev1.Pod)
	if !ok {
		t.Fatalf("watch event of a %T", ev.Object)
	}
	return string(ev.Type), p
}

// deletePod deletes through client-go's REST client and returns the
// server's answer, which the typed client's Delete drops: the pod,
// Terminating, or nil for a Status (the pod is gone).
func (s *testServer) deletePod(ctx context.Context, ns, name string, opts metav1.DeleteOptions) (*corev1.Pod, error) {
	res := s.client.CoreV1().RESTClient().Delete().Namespace(ns).Resource("pods").Name(name).Body(&opts).Do(ctx)
	if err := res.Error(); err != nil {
		return nil, err
	}
	body, _ := res.Raw()
	var kind metav1.TypeMeta
	if err := json.Unmarshal(body, &kind); err != nil || kind.Kind == "Status" {
		return nil, err
	}
	var p corev1.Pod
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, fmt.Errorf("decoding the deleted pod: %w", err)
	}
	return &p, nil
}

func names(items []corev1.Pod) string {
	var out []string
	for _, p := range items {
		out = append(out, p.Name)
	}
	return strings.Join(out, ",")
}
