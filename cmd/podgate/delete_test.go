package main

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/local/apiserver"
	"github.com/podgate/podgate/local/objstore"
)

// terminator does to the store what the node agent's PodDeleter does when
// termination starts: the pod gets its deletion timestamp and grace period
// (grace 0 removes it at once). It records the options it was given.
type terminator struct {
	store *objstore.Store

	mu    sync.Mutex
	grace []string
}

func (d *terminator) DeletePod(_ context.Context, ns, name string, opts metav1.DeleteOptions) error {
	g := "pod's own"
	if opts.GracePeriodSeconds != nil {
		g = strconv.FormatInt(*opts.GracePeriodSeconds, 10)
	}
	d.mu.Lock()
	d.grace = append(d.grace, g)
	d.mu.Unlock()
	if opts.GracePeriodSeconds != nil && *opts.GracePeriodSeconds == 0 {
		_, err := d.store.Pods.Delete(ns, name)
		return err
	}
	_, err := d.store.Pods.Modify(ns, name, func(p *corev1.Pod) error {
		ts := metav1.Now()
		p.DeletionTimestamp = &ts
		p.DeletionGracePeriodSeconds = opts.GracePeriodSeconds
		return nil
	})
	return err
}

func (d *terminator) seen() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return strings.Join(d.grace, ",")
}

func startDeleteAPI(t *testing.T) (*apiServer, *terminator) {
	t.Helper()
	store := objstore.New(objstore.Options{})
	d := &terminator{store: store}
	srv := startAPI(t, apiserver.Config{Store: store, Pods: d})
	seedStore(t, store)
	return srv, d
}

func TestDeleteReturnsOnceTerminationStarted(t *testing.T) {
	noLeaks(t)
	srv, d := startDeleteAPI(t)
	code, out, errOut := cli("delete", "pod", "hello-1", "--api", srv.addr)
	if code != 0 || out != "pod \"hello-1\" deleted\n" || errOut != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	p, err := srv.store.Pods.Get("default", "hello-1")
	if err != nil || p.DeletionTimestamp == nil {
		t.Fatalf("pod after delete: %v %v, want it terminating", p, err)
	}
	if d.seen() != "pod's own" {
		t.Errorf("grace sent: %s, want none (the pod's own)", d.seen())
	}
	// And get shows it the way kubectl does.
	_, out, _ = cli("get", "pods", "hello-1", "--no-headers", "--api", srv.addr)
	if !strings.Contains(out, "Terminating") {
		t.Errorf("get after delete: %q", out)
	}
}

func TestDeleteGracePeriodFlagsFollowKubectl(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		grace  string
		stdout string
		stderr string
	}{
		{"--grace-period is sent", []string{"--grace-period", "5"}, "5", `pod "hello-1" deleted`, ""},
		{"--now is one second", []string{"--now"}, "1", `pod "hello-1" deleted`, ""},
		{"--grace-period 0 without --force is one second", []string{"--grace-period", "0"}, "1", `pod "hello-1" deleted`, ""},
		{"--force kills at once, with a warning", []string{"--force"}, "0", `pod "hello-1" force deleted`, "Warning: immediate deletion kills the pod's containers without waiting for them to stop.\n"},
		{"--force with a grace period keeps it", []string{"--force", "--grace-period", "3"}, "3", `pod "hello-1" force deleted`, ""},
		{"pod/NAME works too", []string{}, "pod's own", `pod "hello-1" deleted`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			noLeaks(t)
			srv, d := startDeleteAPI(t)
			args := append([]string{"delete", "pod", "hello-1", "--api", srv.addr}, tt.args...)
			if tt.name == "pod/NAME works too" {
				args = []string{"delete", "pod/hello-1", "--api", srv.addr}
			}
			code, out, errOut := cli(args...)
			if code != 0 || out != tt.stdout+"\n" || errOut != tt.stderr {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			if d.seen() != tt.grace {
				t.Errorf("grace sent %q, want %q", d.seen(), tt.grace)
			}
		})
	}
}

func TestDeleteErrors(t *testing.T) {
	noLeaks(t)
	srv, d := startDeleteAPI(t)
	down := closedAddr(t)
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"a missing pod is exit 1 after deleting the others", []string{"delete", "pod", "nope", "db-0"}, 1, "pod \"db-0\" deleted\n", "Error: pods \"nope\" not found\n"},
		{"podgate not running is exit 1 with a hint", []string{"delete", "pod", "db-0", "--api", down}, 1, "", "Error: cannot reach podgate at " + down + ": is 'podgate run' running?\n"},
		{"no arguments is a usage error", []string{"delete"}, 2, "", "Error: you must specify pods to delete: delete pod NAME\n"},
		{"no name is a usage error", []string{"delete", "pod"}, 2, "", "Error: you must name the pods to delete: delete pod NAME\n"},
		{"other kinds are a usage error", []string{"delete", "svc", "hello"}, 2, "", "Error: \"svc\": podgate deletes pods only: delete pod NAME\n"},
		{"other kinds in type/name form are a usage error", []string{"delete", "ksvc/hello"}, 2, "", "Error: \"ksvc/hello\": podgate deletes pods only: delete pod/NAME\n"},
		{"--now with --grace-period is a usage error", []string{"delete", "pod", "db-0", "--now", "--grace-period", "3"}, 2, "", "Error: --now and --grace-period cannot be specified together\n"},
		{"a grace period below -1 is a usage error", []string{"delete", "pod", "db-0", "--grace-period", "-5"}, 2, "", "Error: --grace-period -5: must be -1 (the pod's own) or more\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if !strings.Contains(strings.Join(args, " "), "--api") {
				args = append(args, "--api", srv.addr)
			}
			code, out, errOut := cli(args...)
			if code != tt.code || out != tt.stdout || errOut != tt.stderr {
				t.Errorf("exit %d, stdout %q, stderr %q\nwant exit %d, stdout %q, stderr %q", code, out, errOut, tt.code, tt.stdout, tt.stderr)
			}
		})
	}
	if got := d.seen(); got != "pod's own" {
		t.Errorf("deleter calls: %q, want only db-0's", got)
	}
}
