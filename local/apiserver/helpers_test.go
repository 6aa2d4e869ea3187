package apiserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/local/apiclient"
	"github.com/podgate/podgate/local/objstore"
)

// testServer is a real control API on 127.0.0.1:0 over a real store.
type testServer struct {
	store  *objstore.Store
	addr   string
	client *apiclient.Client
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
	c, err := apiclient.New(ln.Addr().String())
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
// bug, not slowness.
func nextEvent(t *testing.T, w *apiclient.Watcher) (apiclient.WatchEvent, error) {
	t.Helper()
	type result struct {
		ev  apiclient.WatchEvent
		err error
	}
	ch := make(chan result, 1)
	go func() {
		ev, err := w.Next()
		ch <- result{ev, err}
	}()
	select {
	case r := <-ch:
		return r.ev, r.err
	case <-time.After(10 * time.Second):
		w.Close()
		<-ch
		t.Fatal("no watch event within 10s")
	}
	panic("unreachable")
}

func mustNext(t *testing.T, w *apiclient.Watcher) (string, *corev1.Pod) {
	t.Helper()
	ev, err := nextEvent(t, w)
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	var p corev1.Pod
	if err := ev.Decode(&p); err != nil {
		t.Fatal(err)
	}
	return string(ev.Type), &p
}

func names(items []corev1.Pod) string {
	var out []string
	for _, p := range items {
		out = append(out, p.Name)
	}
	return strings.Join(out, ",")
}
