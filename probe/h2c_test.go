package probe

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podgate/podgate/gate/contract"
)

// startProtoServer serves HTTP/1.1, h2c (HTTP/2 with prior knowledge) or
// both on 127.0.0.1, answering the status in the path ("/503"), 200 on
// "/"; rec sees every request. It returns the port.
func startProtoServer(t *testing.T, http1, h2c bool, rec *recorder) int {
	t.Helper()
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.last, rec.hits = r, rec.hits+1
		rec.mu.Unlock()
		code := http.StatusOK
		_, _ = fmt.Sscanf(r.URL.Path, "/%d", &code)
		w.WriteHeader(code)
	}))
	var protos http.Protocols
	protos.SetHTTP1(http1)
	protos.SetUnencryptedHTTP2(h2c)
	s.Config.Protocols = &protos
	s.Start()
	t.Cleanup(s.Close)
	_, port := hostPort(t, s.URL)
	return port
}

// TestAttemptH2C: an httpGet probe sent as h2c passes against a container
// that speaks only h2c and fails against one that speaks only HTTP/1.1;
// the request's headers and the verdict's words are the kubelet's.
func TestAttemptH2C(t *testing.T) {
	target := Target{PodIP: "127.0.0.1"}
	for _, tc := range []struct {
		name        string
		http1, h2c  bool
		path        string
		want        Result
		wantMessage string
	}{
		{"an h2c-only container passes", false, true, "/", Success, ""},
		{"a container that speaks both passes", true, true, "/", Success, ""},
		{"an h2c status of 503 fails as the kubelet words it", false, true, "/503", Failure, "HTTP probe failed with statuscode: 503"},
		{"an HTTP/1.1-only container fails", true, false, "/", Failure, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			port := startProtoServer(t, tc.http1, tc.h2c, rec)
			o := runner.AttemptH2C(context.Background(), httpGetProbe(intstr.FromInt(port), tc.path), target, 0)
			if o.Result != tc.want || (tc.wantMessage != "" && o.Message != tc.wantMessage) {
				t.Fatalf("got %v %q, want %v %q", o.Result, o.Message, tc.want, tc.wantMessage)
			}
			if o.Attempts != 1 || o.Duration <= 0 {
				t.Errorf("attempts %d, duration %s: want one attempt, timed", o.Attempts, o.Duration)
			}
			if tc.want == Failure && !tc.h2c {
				return // nothing was answered
			}
			r := rec.request(t)
			if r.Proto != "HTTP/2.0" {
				t.Errorf("the probe came as %s, want HTTP/2.0", r.Proto)
			}
			if ua, want := r.UserAgent(), contract.KubeProbeUserAgent(contract.KubeletVersion); ua != want {
				t.Errorf("User-Agent %q, want the kubelet's %q", ua, want)
			}
			if a := r.Header.Get("Accept"); a != "*/*" {
				t.Errorf("Accept %q, want the kubelet's */*", a)
			}
		})
	}

	t.Run("a probe that is not httpGet is an error", func(t *testing.T) {
		p := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt(1)}}}
		if o := runner.AttemptH2C(context.Background(), p, target, 0); o.Result != Error || !strings.Contains(o.Message, "httpGet") {
			t.Errorf("got %v %q, want an error naming httpGet", o.Result, o.Message)
		}
	})
}
