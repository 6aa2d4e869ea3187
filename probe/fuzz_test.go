package probe

import (
	"bufio"
	"bytes"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// expandOracle restates the kubelet's $(VAR) rules token by token, as a
// second opinion on expandVars.
func expandOracle(s string, vars map[string]string) string {
	var out strings.Builder
	for len(s) > 0 {
		if len(s) < 2 || s[0] != '$' {
			out.WriteByte(s[0])
			s = s[1:]
			continue
		}
		switch {
		case s[1] == '$':
			out.WriteByte('$')
			s = s[2:]
		case s[1] == '(' && strings.Contains(s[2:], ")"):
			name, rest, _ := strings.Cut(s[2:], ")")
			if v, ok := vars[name]; ok {
				out.WriteString(v)
			} else {
				out.WriteString("$(" + name + ")")
			}
			s = rest
		default:
			out.WriteString(s[:2])
			s = s[2:]
		}
	}
	return out.String()
}

func FuzzExpandVars(f *testing.F) {
	for _, seed := range []string{"", "$", "$$", "$(A)", "$$(A)", "$(A", "x$(B)y$", "$()", "$(A$(B))", "$é$(A)"} {
		f.Add(seed)
	}
	vars := map[string]string{"A": "alpha", "B": "$(A)", "": "empty-name"}
	f.Fuzz(func(t *testing.T, s string) {
		got, want := expandVars(s, vars), expandOracle(s, vars)
		if got != want {
			t.Fatalf("expand(%q) = %q, oracle %q", s, got, want)
		}
		if !strings.Contains(s, "$") && got != s {
			t.Fatalf("expand(%q) changed text without $: %q", s, got)
		}
	})
}

// FuzzHTTPRequest feeds arbitrary paths, hosts and headers to the request
// builder: it must build a request or return an error, never panic, and
// with a real scheme a built request keeps the target's host and port
// whatever the path says. (A made-up scheme such as "#x" can turn the whole
// URL into something else; the kubelet builds the same request, and the
// send then fails.)
func FuzzHTTPRequest(f *testing.F) {
	f.Add("/healthz", "", "X-A", "b", "http")
	f.Add("/%zz?a=b", "::1", "Host", "h", "HTTPS")
	f.Add("healthz#frag", "127.0.0.1", "User-Agent", "", "")
	f.Add("//user:pw@evil/x", "a b", "Accept", "", "ftp")
	r := NewRunner()
	f.Fuzz(func(t *testing.T, path, host, hName, hValue, scheme string) {
		h := &corev1.HTTPGetAction{
			Path: path, Host: host, Port: intstr.FromInt32(8080), Scheme: corev1.URIScheme(scheme),
			HTTPHeaders: []corev1.HTTPHeader{{Name: hName, Value: hValue}},
		}
		req, err := r.newHTTPRequest(context.Background(), h, Target{PodIP: "127.0.0.1"})
		if err != nil {
			return
		}
		switch strings.ToLower(scheme) {
		case "", "http", "https":
		default:
			return
		}
		wantHost := host
		if wantHost == "" {
			wantHost = "127.0.0.1"
		}
		if req.URL.Port() != "8080" || req.URL.Hostname() != wantHost {
			t.Fatalf("path %q host %q: request URL %q does not target %s:8080", path, host, req.URL, wantHost)
		}
	})
}

// FuzzPlainHTTPRequestBytes: for any path, Host and header a probe may
// carry, a request plainHTTP writes itself is, byte for byte, what the
// Transport with keep-alives off writes: Request.Write's bytes with
// "Connection: close" after the headers (the Transport's extra header).
func FuzzPlainHTTPRequestBytes(f *testing.F) {
	f.Add("/healthz", "", "X-A", "b")
	f.Add("/%zz?a=b", "app.example.test", "User-Agent", " x\t")
	f.Add("healthz?full=1", "", "Accept", "")
	f.Add("/", "h:1", "Accept-Encoding", "gzip")
	r := NewRunner()
	f.Fuzz(func(t *testing.T, path, host, hName, hValue string) {
		h := &corev1.HTTPGetAction{
			Path: path, Port: intstr.FromInt32(8080),
			HTTPHeaders: []corev1.HTTPHeader{{Name: "Host", Value: host}, {Name: hName, Value: hValue}},
		}
		req, err := r.newHTTPRequest(context.Background(), h, Target{PodIP: "127.0.0.1"})
		if err != nil {
			return
		}
		ruri, ok := writesItself(req)
		if !ok {
			return
		}
		var got bytes.Buffer
		if err := writeRequest(bufio.NewWriter(&got), req, ruri); err != nil {
			t.Fatalf("writeRequest: %v", err)
		}
		var want bytes.Buffer
		if err := req.Write(&want); err != nil {
			t.Fatalf("Request.Write: %v", err)
		}
		w := want.Bytes()
		wire := string(w[:len(w)-2]) + "Connection: close\r\n\r\n"
		if got.String() != wire {
			t.Fatalf("plainHTTP writes\n%q\nthe Transport writes\n%q", got.String(), wire)
		}
	})
}
