package podctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// LogsRequest is one `podgate logs POD` (or pod/POD).
type LogsRequest struct {
	Args      []string
	Namespace string
	Container string
	Follow    bool
	Previous  bool
	// Tail is how many of the last lines to print; -1 prints all.
	Tail       int64
	Timestamps bool
}

// Check reports a request that breaks the rules (a *UsageError).
func (r LogsRequest) Check() error {
	_, _, err := r.parse()
	return err
}

func (r LogsRequest) parse() (string, corev1.PodLogOptions, error) {
	if len(r.Args) != 1 {
		return "", corev1.PodLogOptions{}, usagef("logs takes one pod: logs POD [-c CONTAINER]")
	}
	pod := r.Args[0]
	if typ, name, ok := strings.Cut(pod, "/"); ok {
		if !isPod(typ) {
			return "", corev1.PodLogOptions{}, usagef("%q: podgate prints logs of pods only", pod)
		}
		pod = name
	}
	if err := checkNamespace(r.Namespace); err != nil {
		return "", corev1.PodLogOptions{}, err
	}
	if r.Tail < -1 {
		return "", corev1.PodLogOptions{}, usagef("--tail %d: must be -1 (all lines) or more", r.Tail)
	}
	opts := corev1.PodLogOptions{Container: r.Container, Follow: r.Follow, Previous: r.Previous, Timestamps: r.Timestamps}
	if r.Tail >= 0 {
		tail := r.Tail
		opts.TailLines = &tail
	}
	return pod, opts, nil
}

// Logs copies the container's output to out, as kubectl logs does; with
// Follow until the container stops, the server goes away or ctx ends.
func Logs(ctx context.Context, c *Client, r LogsRequest, out io.Writer) error {
	pod, opts, err := r.parse()
	if err != nil {
		return err
	}
	rc, err := c.CoreV1().Pods(r.Namespace).GetLogs(pod, &opts).Stream(ctx)
	if err != nil {
		return c.reached(err)
	}
	defer rc.Close()
	if _, err := io.Copy(out, rc); err != nil && ctx.Err() == nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("reading logs of %s: %w", pod, err)
	}
	return nil
}
