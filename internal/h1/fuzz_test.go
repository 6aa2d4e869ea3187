package h1

import (
	"bufio"
	"bytes"
	"net/http"
	"testing"
)

// FuzzWriteRequestIsRequestWrite: for any method, target, Host and header
// a client may send, the bytes writeRequest writes for a request the
// fast path takes are Request.Write's.
func FuzzWriteRequestIsRequestWrite(f *testing.F) {
	f.Add("GET", "/a?b=c", "example.com", "X-A", "b")
	f.Add("HEAD", "/", "", "User-Agent", "  ")
	f.Add("GET", "/%zz", "h:1", "User-Agent", "a\nb")
	f.Add("OPTIONS", "*", "h", "Accept", "")
	f.Add("POST", "/", "h", "Idempotency-Key", "k")
	f.Fuzz(func(t *testing.T, method, target, host, name, value string) {
		req, err := http.NewRequest(method, "http://10.0.0.1:8080", nil)
		if err != nil {
			return
		}
		req.URL.Opaque = ""
		req.URL.Path, req.URL.RawPath, req.URL.RawQuery = "", "", ""
		if u, err := req.URL.Parse(target); err == nil {
			req.URL = u
		}
		req.Host = host
		req.Header[http.CanonicalHeaderKey(name)] = []string{value}
		if !FastPath(req) {
			return
		}
		var got, want bytes.Buffer
		bw := bufio.NewWriter(&got)
		gotErr := writeRequest(bw, req)
		if gotErr == nil {
			gotErr = bw.Flush()
		}
		wantErr := req.Write(&want)
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("writeRequest error %v, Request.Write error %v", gotErr, wantErr)
		}
		if gotErr == nil && got.String() != want.String() {
			t.Fatalf("writeRequest writes\n%q\nRequest.Write writes\n%q", got.String(), want.String())
		}
	})
}
