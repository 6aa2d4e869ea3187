package apiserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/local/objstore"
	"github.com/podgate/podgate/local/podctl"
)

func TestWatchStreamIsNewlineDelimitedWatchEvents(t *testing.T) {
	s := startServer(t, Config{})
	s.createPod(t, testPod("default", "web", nil))

	resp, err := http.Get("http://" + s.addr + "/api/v1/pods?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	defer http.DefaultClient.CloseIdleConnections()
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	lines := bufio.NewScanner(resp.Body)
	readEvent := func() metav1.WatchEvent {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("stream ended: %v", lines.Err())
		}
		var ev metav1.WatchEvent
		if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
			t.Fatalf("line %q is not a WatchEvent: %v", lines.Text(), err)
		}
		return ev
	}
	ev := readEvent()
	var p corev1.Pod
	if err := json.Unmarshal(ev.Object.Raw, &p); err != nil {
		t.Fatal(err)
	}
	if ev.Type != "ADDED" || p.Kind != "Pod" || p.APIVersion != "v1" || p.Name != "web" {
		t.Errorf("first event %s %s/%s %s, want ADDED v1/Pod web", ev.Type, p.APIVersion, p.Kind, p.Name)
	}
	s.store.Pods.Modify("default", "web", func(p *corev1.Pod) error { p.Status.Phase = corev1.PodRunning; return nil })
	if ev := readEvent(); ev.Type != "MODIFIED" {
		t.Errorf("second event %s, want MODIFIED", ev.Type)
	}
	s.store.Pods.Delete("default", "web")
	if ev := readEvent(); ev.Type != "DELETED" {
		t.Errorf("third event %s, want DELETED", ev.Type)
	}
}

func TestWatchFromAListsVersionSeesOnlyLaterChanges(t *testing.T) {
	s := startServer(t, Config{})
	s.createPod(t, testPod("default", "old", nil))
	l, err := s.client.CoreV1().Pods("").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.client.CoreV1().Pods("").Watch(t.Context(), metav1.ListOptions{ResourceVersion: l.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	s.createPod(t, testPod("default", "new", nil))
	if typ, p := mustNext(t, w); typ != "ADDED" || p.Name != "new" || p.ResourceVersion != "2" {
		t.Errorf("got %s %s rv %s, want ADDED new rv 2", typ, p.Name, p.ResourceVersion)
	}
}

func TestWatchSelectorsTurnMatchChangesIntoAddedAndDeleted(t *testing.T) {
	s := startServer(t, Config{})
	s.createPod(t, testPod("default", "web", map[string]string{"app": "web"}))
	s.createPod(t, testPod("prod", "web", map[string]string{"app": "web"}))
	w, err := s.client.CoreV1().Pods("default").Watch(t.Context(), metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	relabel := func(ns, app string) {
		s.store.Pods.Modify(ns, "web", func(p *corev1.Pod) error { p.Labels["app"] = app; return nil })
	}
	steps := []struct {
		name   string
		change func()
		want   string // event type and app label, or "" for none before the next
	}{
		{"the matching pod is replayed as ADDED", func() {}, "ADDED web"},
		{"another namespace is not seen", func() { relabel("prod", "web2") }, ""},
		{"a change that still matches is MODIFIED", func() {
			s.store.Pods.Modify("default", "web", func(p *corev1.Pod) error { p.Status.Phase = corev1.PodRunning; return nil })
		}, "MODIFIED web"},
		{"a change that stops matching is DELETED", func() { relabel("default", "db") }, "DELETED db"},
		{"changes while not matching are not seen", func() { relabel("default", "cache") }, ""},
		{"a change that starts matching is ADDED", func() { relabel("default", "web") }, "ADDED web"},
		{"deleting a matching pod is DELETED", func() { s.store.Pods.Delete("default", "web") }, "DELETED web"},
	}
	for _, st := range steps {
		st.change()
		if st.want == "" {
			continue
		}
		typ, p := mustNext(t, w)
		if got := typ + " " + p.Labels["app"]; got != st.want {
			t.Errorf("%s: got %q, want %q", st.name, got, st.want)
		}
	}
}

func TestWatchFromACompactedVersionEndsWithExpired(t *testing.T) {
	store := objstore.New(objstore.Options{HistorySize: 2})
	s := startServer(t, Config{Store: store})
	for _, n := range []string{"a", "b", "c", "d"} {
		s.createPod(t, testPod("default", n, nil))
	}
	w, err := s.client.CoreV1().Pods("").Watch(t.Context(), metav1.ListOptions{ResourceVersion: "1"})
	if err != nil {
		t.Fatalf("the watch itself is accepted, as the API server's is: %v", err)
	}
	defer w.Stop()
	_, err = nextEvent(t, w)
	if !apierrors.IsResourceExpired(err) {
		t.Fatalf("err = %v, want 410 Expired", err)
	}
	if want := "too old resource version: 1 (3)"; err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
}

func TestWatchTimeoutEndsTheStream(t *testing.T) {
	s := startServer(t, Config{})
	oneSecond := int64(1)
	w, err := s.client.CoreV1().Pods("").Watch(t.Context(), metav1.ListOptions{TimeoutSeconds: &oneSecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := nextEvent(t, w); err != io.EOF {
		t.Errorf("err = %v, want io.EOF", err)
	}
}

func TestCancellingTheCallersContextEndsTheWatch(t *testing.T) {
	s := startServer(t, Config{})
	ctx, cancel := context.WithCancel(t.Context())
	w, err := s.client.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	cancel()
	// client-go may report the cancellation as an ERROR event first.
	for {
		if _, err := nextEvent(t, w); err == io.EOF {
			break
		}
	}
}

func TestShutdownEndsOpenWatches(t *testing.T) {
	store := objstore.New(objstore.Options{})
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- NewServer(Config{Store: store}).Serve(ctx, ln) }()
	c, _ := podctl.NewClient(ln.Addr().String())
	defer c.Close()
	w, err := c.CoreV1().Pods("").Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	cancel()
	if _, err := nextEvent(t, w); err != io.EOF {
		t.Errorf("watch after shutdown: %v, want io.EOF", err)
	}
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if n := store.Pods.Watchers(); n != 0 {
		t.Errorf("%d store watchers left after shutdown", n)
	}
}
