package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/podgate/podgate/local/apiserver"
	"github.com/podgate/podgate/local/objstore"
)

// containerLogs is a LogSource with what the node agent keeps per
// container: the output so far, and with Follow whatever the test writes
// next until it closes lines (the container stopped) or ctx ends.
type containerLogs struct {
	output map[string]string
	lines  chan string

	mu   sync.Mutex
	opts []corev1.PodLogOptions
}

func (l *containerLogs) Logs(ctx context.Context, ns, pod string, opts corev1.PodLogOptions) (io.ReadCloser, error) {
	l.mu.Lock()
	l.opts = append(l.opts, opts)
	l.mu.Unlock()
	if opts.Container == "" && len(l.output) > 1 {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: [app gate]", pod))
	}
	if opts.Container == "" {
		opts.Container = "app"
	}
	out, ok := l.output[opts.Container]
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", opts.Container, pod))
	}
	if !opts.Follow {
		return io.NopCloser(strings.NewReader(out)), nil
	}
	pr, pw := io.Pipe()
	go func() {
		io.WriteString(pw, out)
		for {
			select {
			case <-ctx.Done():
				pw.CloseWithError(ctx.Err())
				return
			case line, ok := <-l.lines:
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

func (l *containerLogs) last() corev1.PodLogOptions {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.opts[len(l.opts)-1]
}

func startLogsAPI(t *testing.T, output map[string]string) (*apiServer, *containerLogs) {
	t.Helper()
	store := objstore.New(objstore.Options{})
	src := &containerLogs{output: output, lines: make(chan string)}
	srv := startAPI(t, apiserver.Config{Store: store, Logs: src})
	seedStore(t, store)
	return srv, src
}

func TestLogsPrintAContainersOutput(t *testing.T) {
	noLeaks(t)
	srv, src := startLogsAPI(t, map[string]string{"app": "hello-1/app | listening on 127.0.1.9:8080\n", "gate": "hello-1/gate | ready\n"})
	code, out, errOut := cli("logs", "hello-1", "-c", "gate", "-p", "--tail", "20", "--timestamps", "--api", srv.addr)
	if code != 0 || out != "hello-1/gate | ready\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	got := src.last()
	if got.Container != "gate" || !got.Previous || !got.Timestamps || got.Follow || got.TailLines == nil || *got.TailLines != 20 {
		t.Errorf("the node agent was asked for %+v", got)
	}
	code, out, _ = cli("logs", "pod/hello-1", "-c", "app", "--api", srv.addr)
	if code != 0 || out != "hello-1/app | listening on 127.0.1.9:8080\n" || src.last().TailLines != nil {
		t.Errorf("pod/NAME: exit %d %q, tail %v", code, out, src.last().TailLines)
	}
}

func TestLogsFollowStreamsUntilTheContainerStops(t *testing.T) {
	noLeaks(t)
	srv, src := startLogsAPI(t, map[string]string{"app": "one\n"})
	f := startCLI("logs", "hello-1", "-f", "--api", srv.addr)
	f.waitFor(t, "one\n")
	src.lines <- "two\n"
	f.waitFor(t, "one\ntwo\n")
	close(src.lines)
	if code := f.wait(t); code != 0 || f.out.String() != "one\ntwo\n" {
		t.Errorf("exit %d, output %q, stderr %q", code, f.out.String(), f.err.String())
	}
}

func TestLogsErrors(t *testing.T) {
	noLeaks(t)
	srv, _ := startLogsAPI(t, map[string]string{"app": "x\n", "gate": "y\n"})
	down := closedAddr(t)
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"a pod with several containers needs -c", []string{"logs", "hello-1"}, 1, "Error: a container name must be specified for pod hello-1, choose one of: [app gate]\n"},
		{"an unknown container is exit 1", []string{"logs", "hello-1", "-c", "db"}, 1, "Error: container db is not valid for pod hello-1\n"},
		{"a missing pod is exit 1", []string{"logs", "nope", "-c", "app"}, 1, "Error: pods \"nope\" not found\n"},
		{"podgate not running is exit 1 with a hint", []string{"logs", "hello-1", "--api", down}, 1, "Error: cannot reach podgate at " + down + ": is 'podgate run' running?\n"},
		{"no pod is a usage error", []string{"logs"}, 2, "Error: logs takes one pod: logs POD [-c CONTAINER]\n"},
		{"two pods are a usage error", []string{"logs", "a", "b"}, 2, "Error: logs takes one pod: logs POD [-c CONTAINER]\n"},
		{"other kinds are a usage error", []string{"logs", "ksvc/hello"}, 2, "Error: \"ksvc/hello\": podgate prints logs of pods only\n"},
		{"a tail below -1 is a usage error", []string{"logs", "hello-1", "--tail", "-3"}, 2, "Error: --tail -3: must be -1 (all lines) or more\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if !slices.Contains(args, "--api") {
				args = append(args, "--api", srv.addr)
			}
			code, out, errOut := cli(args...)
			if code != tt.code || out != "" || errOut != tt.stderr {
				t.Errorf("exit %d, stdout %q, stderr %q\nwant exit %d, stderr %q", code, out, errOut, tt.code, tt.stderr)
			}
		})
	}
}
