package lab_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podgate/podgate/lab"
)

func TestStartRefusesWhatCannotRun(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(`apiVersion: v1
kind: Pod
metadata: {name: bad}
spec:
  containers:
  - name: c
    image: ghcr.io/podgate/testapp
    livenessProbe:
      httpGet: {path: /, port: web}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  lab.Config
		want string
	}{
		{"no binary", lab.Config{PodCIDR: "127.0.79.0/24", Files: []string{bad}}, "Config.Binary is required"},
		{"a pod range off loopback", lab.Config{Binary: podgateBin, PodCIDR: "10.0.0.0/24", Files: []string{bad}}, "must lie in 127.0.0.0/8"},
		{"a malformed pod range", lab.Config{Binary: podgateBin, PodCIDR: "127.0.79.0", Files: []string{bad}}, "PodCIDR"},
		{"no manifest", lab.Config{Binary: podgateBin, PodCIDR: "127.0.79.0/24"}, "at least one manifest"},
		{"a binary that does not exist", lab.Config{Binary: filepath.Join(dir, "nope"), PodCIDR: "127.0.79.0/24", Files: []string{bad}}, "starting"},
		// podgate itself refuses: its exit and its stderr are the error.
		{"an invalid manifest: podgate's own words", lab.Config{Binary: podgateBin, PodCIDR: "127.0.79.0/24", Files: []string{bad}},
			"spec.containers[0].livenessProbe.httpGet.port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := lab.Start(t.Context(), tc.cfg)
			if err == nil {
				_, _ = p.Stop(0)
				t.Fatal("Start succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestProcessStartAndStop(t *testing.T) {
	hello := write(t, example(t, "hello"), "hello.yaml") // a short grace: a quick graceful stop
	start := func(t *testing.T) *lab.Process {
		t.Helper()
		p, err := lab.Start(waitCtx(t), lab.Config{Binary: podgateBin, PodCIDR: "127.0.79.0/24", Files: []string{hello}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = p.Stop(0) })
		return p
	}
	t.Run("a graceful stop exits 0", func(t *testing.T) {
		p := start(t)
		if err := p.WaitRoute(waitCtx(t), "hello.default.example.com"); err != nil {
			t.Fatal(err)
		}
		if r := p.Routes(); len(r) != 1 || r[0] != "hello.default.example.com" {
			t.Errorf("routes %v", r)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		if err := p.WaitRoute(ctx, "nope.default.example.com"); err == nil || !strings.Contains(err.Error(), "routes [hello.default.example.com]") {
			t.Errorf("WaitRoute of an unknown host: %v", err)
		}
		if !strings.HasPrefix(p.FrontDoorURL(), "http://127.0.0.1:") || !strings.HasPrefix(p.APIAddr(), "127.0.0.1:") {
			t.Errorf("front door %s, control API %s: want loopback addresses", p.FrontDoorURL(), p.APIAddr())
		}
		pod, err := lab.WaitPod(waitCtx(t), lab.Local{Process: p}, "ready", lab.PodReady)
		if err != nil {
			t.Fatal(err)
		}
		code, err := p.Stop(waitTimeout)
		if err != nil || code != 0 {
			t.Errorf("Stop = %d, %v; want 0", code, err)
		}
		if !strings.Contains(p.Stdout(), pod.Name+"/user-container | ") || !strings.Contains(p.Stderr(), "podgate: all pods stopped") {
			t.Errorf("output not kept:\nstdout %.300s\nstderr %.300s", p.Stdout(), p.Stderr())
		}
		select {
		case <-p.Done():
		default:
			t.Error("Done not closed after Stop")
		}
	})
	t.Run("no grace left kills", func(t *testing.T) {
		p := start(t)
		code, err := p.Stop(0)
		if err == nil || !strings.Contains(err.Error(), "killed") || code != -1 {
			t.Errorf("Stop(0) = %d, %v; want -1 and an error saying it was killed", code, err)
		}
		if code, err := p.Stop(time.Second); code != -1 || err != nil {
			t.Errorf("Stop again = %d, %v; want the same exit and nothing more to do", code, err)
		}
	})
}
