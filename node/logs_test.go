package node

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func (h *harness) readLogs(t *testing.T, pod string, opts corev1.PodLogOptions) string {
	t.Helper()
	rc, err := h.agent.Logs(context.Background(), "default", pod, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLogs(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.start(podYAML("logs", `  containers:
  - name: c
    image: busybox
    command: ["/bin/sh", "-c", "echo one; echo two >&2; printf three; exit 1"]
  - name: d
    image: busybox
    command: ["/bin/sh", "-c", "sleep 600"]
`))
	h.restarted("logs", "c", 1)
	ctx := context.Background()

	t.Run("the previous instance keeps its output, an unterminated last line included", func(t *testing.T) {
		got := h.readLogs(t, "logs", corev1.PodLogOptions{Container: "c", Previous: true})
		for _, want := range []string{"one\n", "two\n", "three\n"} {
			if !strings.Contains(got, want) {
				t.Errorf("previous log %q lacks %q", got, want)
			}
		}
	})
	t.Run("tailLines keeps the last lines", func(t *testing.T) {
		got := h.readLogs(t, "logs", corev1.PodLogOptions{Container: "c", Previous: true, TailLines: ptr(int64(1))})
		if got != "three\n" {
			t.Errorf("tail 1 = %q, want \"three\\n\"", got)
		}
	})
	t.Run("timestamps prefix each line", func(t *testing.T) {
		got := h.readLogs(t, "logs", corev1.PodLogOptions{Container: "c", Previous: true, TailLines: ptr(int64(1)), Timestamps: true})
		ts, rest, _ := strings.Cut(got, " ")
		if _, err := time.Parse(time.RFC3339Nano, ts); err != nil || rest != "three\n" {
			t.Errorf("got %q, want an RFC 3339 timestamp, a space and the line", got)
		}
	})
	t.Run("a pod with two containers needs a container name", func(t *testing.T) {
		_, err := h.agent.Logs(ctx, "default", "logs", corev1.PodLogOptions{})
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "a container name must be specified for pod logs, choose one of: [c d]") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("an unknown container is a bad request", func(t *testing.T) {
		_, err := h.agent.Logs(ctx, "default", "logs", corev1.PodLogOptions{Container: "x"})
		if !apierrors.IsBadRequest(err) {
			t.Errorf("err = %v, want BadRequest", err)
		}
	})
	t.Run("an unknown pod is not found", func(t *testing.T) {
		_, err := h.agent.Logs(ctx, "default", "nope", corev1.PodLogOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("err = %v, want NotFound", err)
		}
	})
	t.Run("container output is prefixed on the agent's output", func(t *testing.T) {
		if !strings.Contains(h.out.String(), "logs/c | one\n") {
			t.Errorf("output lacks \"logs/c | one\":\n%s", h.out.String())
		}
	})
}

func TestLogsFollow(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.start(podYAML("follow", `  containers:
  - name: c
    image: busybox
    command: ["/bin/sh", "-c", "echo first; sleep 0.5; echo second; sleep 600"]
`))
	h.waitOutputCount("follow", "first", 1)
	ctx, cancel := context.WithCancel(context.Background())
	rc, err := h.agent.Logs(ctx, "default", "follow", corev1.PodLogOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var got strings.Builder
	buf := make([]byte, 64)
	for !strings.Contains(got.String(), "second\n") {
		n, err := rc.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			t.Fatalf("read: %v after %q", err, got.String())
		}
	}
	if got.String() != "first\nsecond\n" {
		t.Errorf("followed %q", got.String())
	}
	// A follower ends when its context does.
	cancel()
	if _, err := rc.Read(buf); err != io.EOF {
		t.Errorf("read after cancel = %v, want EOF", err)
	}
}

func ptr[T any](v T) *T { return &v }
