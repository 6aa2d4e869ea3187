package podlogs

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/node/logbuf"
)

func TestContainerPicksAsTheAPIServer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, named string
		ann         map[string]string
		mains       []string
		inits       []string
		want        string
		wantErr     string
	}{
		{name: "the only container when none is named", mains: []string{"app"}, want: "app"},
		{name: "the named container", named: "b", mains: []string{"a", "b"}, want: "b"},
		{name: "a named init container", named: "setup", mains: []string{"a"}, inits: []string{"setup"}, want: "setup"},
		{name: "the default-container annotation", ann: map[string]string{DefaultContainerAnnotation: "b"}, mains: []string{"a", "b"}, want: "b"},
		{name: "a name wins over the annotation", named: "a", ann: map[string]string{DefaultContainerAnnotation: "b"}, mains: []string{"a", "b"}, want: "a"},
		{name: "several containers need a name", mains: []string{"a", "b"}, wantErr: "a container name must be specified for pod p, choose one of: [a b]"},
		{name: "an init container makes the only main ambiguous", mains: []string{"a"}, inits: []string{"i"}, wantErr: "a container name must be specified for pod p, choose one of: [a] or one of the init containers: [i]"},
		{name: "an unknown name", named: "x", mains: []string{"a"}, wantErr: "container x is not valid for pod p"},
		{name: "an annotation naming no container", ann: map[string]string{DefaultContainerAnnotation: "x"}, mains: []string{"a"}, wantErr: "container x is not valid for pod p"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Container("p", tc.named, tc.ann, tc.mains, tc.inits)
			if tc.wantErr != "" {
				if !apierrors.IsBadRequest(err) || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want 400 %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestReadOptionsFollowTheRequest(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ten, tail := int64(10), int64(3)
	at := metav1.NewTime(now.Add(-time.Hour))
	for _, tc := range []struct {
		name       string
		opts       corev1.PodLogOptions
		wantFollow bool
		wantSince  time.Time
	}{
		{name: "follow the current instance", opts: corev1.PodLogOptions{Follow: true}, wantFollow: true},
		{name: "the previous instance is never followed", opts: corev1.PodLogOptions{Follow: true, Previous: true}},
		{name: "sinceSeconds counts back from now", opts: corev1.PodLogOptions{SinceSeconds: &ten}, wantSince: now.Add(-10 * time.Second)},
		{name: "sinceTime wins over sinceSeconds", opts: corev1.PodLogOptions{SinceSeconds: &ten, SinceTime: &at}, wantSince: at.Time},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.opts.Timestamps, tc.opts.TailLines = true, &tail
			ro := ReadOptions(tc.opts, now)
			if ro.Follow != tc.wantFollow || !ro.Since.Equal(tc.wantSince) || !ro.Timestamps || ro.TailLines != &tail {
				t.Fatalf("got %+v; want follow %v since %s, timestamps and tail kept", ro, tc.wantFollow, tc.wantSince)
			}
		})
	}
}

func TestUnavailableSaysWhy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		previous bool
		want     string
	}{
		{"no previous instance", true, `previous terminated container "c" in pod "p" not found`},
		{"not started yet", false, `container "c" in pod "p" is waiting to start: ContainerCreating`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := Unavailable("p", "c", tc.previous)
			if !apierrors.IsBadRequest(err) || err.Error() != tc.want {
				t.Fatalf("error %v, want 400 %q", err, tc.want)
			}
		})
	}
}

func TestReadGivesTheCurrentOrPreviousInstancesOutput(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	for _, tc := range []struct {
		name      string
		instances []string // each instance's output, oldest first
		previous  bool
		want      string
		wantErr   string
	}{
		{"nothing started yet is a 400", nil, false, "", "is waiting to start"},
		{"the current instance's output", []string{"one\n"}, false, "one\n", ""},
		{"no previous instance is a 400", []string{"one\n"}, true, "", "previous terminated container"},
		{"the previous instance's output", []string{"one\n", "two\n"}, true, "one\n", ""},
		{"after a restart the current is the new one", []string{"one\n", "two\n"}, false, "two\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var kept logbuf.Kept
			for _, out := range tc.instances {
				buf := kept.Next(0)
				w := logbuf.NewLineWriter("", nil, buf, clock)
				if _, err := w.Write([]byte(out)); err != nil {
					t.Fatal(err)
				}
				w.Flush()
				buf.End()
			}
			r, err := Read(context.Background(), "p", "app", &kept, corev1.PodLogOptions{Previous: tc.previous}, now)
			if tc.wantErr != "" {
				if err == nil || !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Read = %v, want a 400 with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("read %q, want %q", got, tc.want)
			}
		})
	}
}
