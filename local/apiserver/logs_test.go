package apiserver

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/podgate/podgate/local/objstore"
)

// lineLog is a LogSource over fixed text per container; with Follow the
// reader then streams what the test writes into follow until ctx ends.
type lineLog struct {
	text   map[string]string
	follow chan string

	mu   sync.Mutex
	seen []corev1.PodLogOptions
}

func (l *lineLog) Logs(ctx context.Context, ns, pod string, opts corev1.PodLogOptions) (io.ReadCloser, error) {
	l.mu.Lock()
	l.seen = append(l.seen, opts)
	l.mu.Unlock()
	if opts.Container == "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: [app sidecar]", pod))
	}
	text, ok := l.text[opts.Container]
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", opts.Container, pod))
	}
	if !opts.Follow {
		return io.NopCloser(strings.NewReader(text)), nil
	}
	pr, pw := io.Pipe()
	go func() {
		io.WriteString(pw, text)
		for {
			select {
			case <-ctx.Done():
				pw.CloseWithError(ctx.Err())
				return
			case line, ok := <-l.follow:
				if !ok {
					pw.Close()
					return
				}
				io.WriteString(pw, line)
			}
		}
	}()
	return pr, nil
}

func TestLogsServeTheContainersOutput(t *testing.T) {
	src := &lineLog{text: map[string]string{"app": "web/app | hello\nweb/app | world\n"}}
	s := startServer(t, Config{Logs: src})
	s.createPod(t, testPod("default", "web", nil))

	tail := int64(5)
	rc, err := s.client.CoreV1().Pods("default").GetLogs("web", &corev1.PodLogOptions{Container: "app", Previous: true, Timestamps: true, TailLines: &tail}).Stream(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(rc)
	rc.Close()
	if string(out) != "web/app | hello\nweb/app | world\n" {
		t.Errorf("logs %q", out)
	}
	src.mu.Lock()
	got := src.seen[0]
	src.mu.Unlock()
	if got.Container != "app" || !got.Previous || !got.Timestamps || got.Follow || got.TailLines == nil || *got.TailLines != 5 {
		t.Errorf("source saw %+v", got)
	}
}

func TestLogsLimitBytesIsEnforcedByTheServer(t *testing.T) {
	src := &lineLog{text: map[string]string{"app": "0123456789"}}
	s := startServer(t, Config{Logs: src})
	s.createPod(t, testPod("default", "web", nil))
	code, body := s.raw(t, http.MethodGet, "/api/v1/namespaces/default/pods/web/log?container=app&limitBytes=4")
	if code != 200 || body != "0123" {
		t.Errorf("%d %q", code, body)
	}
}

func TestFollowedLogsArriveAsTheyAreWritten(t *testing.T) {
	src := &lineLog{text: map[string]string{"app": "first\n"}, follow: make(chan string)}
	s := startServer(t, Config{Logs: src})
	s.createPod(t, testPod("default", "web", nil))
	rc, err := s.client.CoreV1().Pods("default").GetLogs("web", &corev1.PodLogOptions{Container: "app", Follow: true}).Stream(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	lines := bufio.NewReader(rc)
	read := func() string {
		t.Helper()
		l, err := lines.ReadString('\n')
		if err != nil {
			t.Fatalf("reading followed log: %v", err)
		}
		return l
	}
	if l := read(); l != "first\n" {
		t.Errorf("got %q", l)
	}
	// Each line must reach the client before the next is written: the
	// server flushes as it goes (the unbuffered channel paces the writer).
	for _, want := range []string{"second\n", "third\n"} {
		src.follow <- want
		if l := read(); l != want {
			t.Errorf("got %q, want %q", l, want)
		}
	}
	close(src.follow)
	if rest, err := io.ReadAll(lines); err != nil || len(rest) != 0 {
		t.Errorf("after the container stopped: %q %v, want a clean end", rest, err)
	}
}

func TestLogErrors(t *testing.T) {
	src := &lineLog{text: map[string]string{"app": "x"}}
	s := startServer(t, Config{Store: objstore.New(objstore.Options{}), Logs: src})
	s.createPod(t, testPod("default", "web", nil))
	tests := []struct {
		name    string
		path    string
		code    int
		message string
	}{
		{"a missing pod is 404", "/api/v1/namespaces/default/pods/nope/log", 404, `pods "nope" not found`},
		{"the source's 400 passes through", "/api/v1/namespaces/default/pods/web/log", 400, `a container name must be specified for pod web, choose one of: [app sidecar]`},
		{"an unknown container is the source's 400", "/api/v1/namespaces/default/pods/web/log?container=db", 400, `container db is not valid for pod web`},
		{"a bad follow flag is 400", "/api/v1/namespaces/default/pods/web/log?follow=sometimes", 400, `follow "sometimes"`},
		{"a negative tail is 400", "/api/v1/namespaces/default/pods/web/log?tailLines=-2", 400, `tailLines "-2": want an integer >= 0`},
		{"a zero byte limit is 400", "/api/v1/namespaces/default/pods/web/log?limitBytes=0", 400, `limitBytes "0": want an integer >= 1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := s.raw(t, http.MethodGet, tt.path)
			st := decodeStatus(t, body)
			if code != tt.code || !strings.Contains(st.Message, tt.message) {
				t.Errorf("%d %q, want %d with %q", code, st.Message, tt.code, tt.message)
			}
		})
	}
	_, err := s.client.CoreV1().Pods("default").GetLogs("web", &corev1.PodLogOptions{Container: "db"}).Stream(t.Context())
	if !apierrors.IsBadRequest(err) {
		t.Errorf("client: %v, want the BadRequest StatusError", err)
	}
}
