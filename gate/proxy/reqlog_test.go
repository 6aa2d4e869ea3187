package proxy

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/test/syncbuf"
)

func logLine(t *testing.T, opts RequestLogOptions, r *http.Request, probe bool) string {
	t.Helper()
	var buf syncbuf.Buffer
	l, err := NewRequestLog(&buf, opts)
	if err != nil {
		t.Fatal(err)
	}
	l.Log(r, 201, 42, 1500*time.Millisecond, probe)
	return buf.String()
}

func TestRequestLog(t *testing.T) {
	rev := RequestLogRevision{Name: "hello-00001", Namespace: "default", Service: "hello", Configuration: "hello", PodName: "hello-pod", PodIP: "10.0.0.7"}
	req := func() *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/a?b=c", strings.NewReader("12345"))
		r.Header.Set("User-Agent", "curl/8")
		r.Header.Set("Referer", "http://ref/")
		r.Header.Set("Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
		return r
	}

	t.Run("the direct JSON line says what Knative's default template says", func(t *testing.T) {
		direct := logLine(t, RequestLogOptions{Template: contract.DefaultRequestLogTemplate, DefaultTemplate: contract.DefaultRequestLogTemplate, Revision: rev}, req(), false)
		templated := logLine(t, RequestLogOptions{Template: contract.DefaultRequestLogTemplate, Revision: rev}, req(), false)
		var a, b requestLogLine
		if err := json.Unmarshal([]byte(direct), &a); err != nil {
			t.Fatalf("direct line %q: %v", direct, err)
		}
		if err := json.Unmarshal([]byte(templated), &b); err != nil {
			t.Fatalf("templated line %q: %v", templated, err)
		}
		// Only the latency's digits differ: "1.500000000s" and "1.5s".
		if a.HTTPRequest.Latency != "1.500000000s" || b.HTTPRequest.Latency != "1.5s" {
			t.Errorf("latencies %q and %q", a.HTTPRequest.Latency, b.HTTPRequest.Latency)
		}
		a.HTTPRequest.Latency, b.HTTPRequest.Latency = "", ""
		if a != b {
			t.Errorf("direct %+v\ntemplated %+v", a, b)
		}
		if a.TraceID != "0af7651916cd43dd8448eb211c80319c" || a.HTTPRequest.ServerIP != "10.0.0.7" || a.HTTPRequest.Status != 201 || a.HTTPRequest.RequestSize != "5" {
			t.Errorf("line %+v", a)
		}
	})

	t.Run("a template sees Knative's input", func(t *testing.T) {
		got := logLine(t, RequestLogOptions{Template: "{{.Revision.Service}}/{{.Revision.Configuration}}/{{.Revision.PodIP}} {{.Response.Code}} {{.Response.Size}} {{.Response.Latency}} {{.TraceID}}", Revision: rev}, req(), false)
		if want := "hello/hello/10.0.0.7 201 42 1.5 0af7651916cd43dd8448eb211c80319c\n"; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	})

	t.Run("a template that fails on a request writes Knative's fallback line", func(t *testing.T) {
		got := logLine(t, RequestLogOptions{Template: "{{.Request.NoSuchField}}", Revision: rev}, req(), false)
		if want := "Invalid request log template: method: POST, response code: 201, latency: 1.5, url: /a?b=c\n"; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	})

	t.Run("probes are left out unless asked for", func(t *testing.T) {
		if got := logLine(t, RequestLogOptions{Revision: rev}, req(), true); got != "" {
			t.Errorf("probe logged: %q", got)
		}
		if got := logLine(t, RequestLogOptions{Revision: rev, Probes: true}, req(), true); got == "" {
			t.Error("probe not logged with Probes")
		}
	})

	t.Run("B3 when there is no traceparent", func(t *testing.T) {
		h := http.Header{"X-B3-Traceid": {"463ac35c9f6413ad"}}
		if got := TraceID(h); got != "463ac35c9f6413ad" {
			t.Errorf("TraceID = %q", got)
		}
		h.Set("Traceparent", "00-aaaa-bbbb-01")
		if got := TraceID(h); got != "aaaa" {
			t.Errorf("TraceID = %q, want traceparent's", got)
		}
	})

	t.Run("a template that does not parse is refused", func(t *testing.T) {
		if _, err := NewRequestLog(&syncbuf.Buffer{}, RequestLogOptions{Template: "{{"}); err == nil || !strings.Contains(err.Error(), "request log template") {
			t.Errorf("err = %v", err)
		}
	})
}
