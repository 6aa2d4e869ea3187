package probe

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podgate/podgate/gate/contract"
)

// recorder is an HTTP handler that remembers the last request it saw.
type recorder struct {
	mu   sync.Mutex
	last *http.Request
	hits int
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec.mu.Lock()
	rec.last, rec.hits = r, rec.hits+1
	rec.mu.Unlock()
	_, _ = w.Write([]byte("ok"))
}

func (rec *recorder) request(t *testing.T) *http.Request {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.last == nil {
		t.Fatal("server saw no request")
	}
	return rec.last
}

func TestHTTPTargetHost(t *testing.T) {
	rec4 := &recorder{}
	s4 := httptest.NewServer(rec4)
	defer s4.Close()
	_, port4 := hostPort(t, s4.URL)

	tests := []struct {
		name, podIP, host, wantHost string
	}{
		{"without httpGet.host the pod IP is the target", "127.0.0.1", "", fmt.Sprintf("127.0.0.1:%d", port4)},
		{"httpGet.host overrides the pod IP", "127.0.0.2", "127.0.0.1", fmt.Sprintf("127.0.0.1:%d", port4)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := httpGetProbe(intstr.FromInt32(int32(port4)), "/")
			p.HTTPGet.Host = tc.host
			o := run(t, p, Target{PodIP: tc.podIP})
			if o.Result != Success {
				t.Fatalf("result = %v (%s), want success", o.Result, o.Message)
			}
			if got := rec4.request(t).Host; got != tc.wantHost {
				t.Errorf("server saw Host %q, want %q", got, tc.wantHost)
			}
		})
	}

	rec6 := &recorder{}
	s6 := newIPv6Server(t, rec6)
	_, port6 := hostPort(t, s6.URL)
	for _, tc := range []struct{ name, podIP, host string }{
		{"an IPv6 pod IP is bracketed", "::1", ""},
		{"an IPv6 httpGet.host is bracketed", "127.0.0.1", "::1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := httpGetProbe(intstr.FromInt32(int32(port6)), "/")
			p.HTTPGet.Host = tc.host
			o := run(t, p, Target{PodIP: tc.podIP})
			if o.Result != Success {
				t.Fatalf("result = %v (%s), want success", o.Result, o.Message)
			}
			if got, want := rec6.request(t).Host, fmt.Sprintf("[::1]:%d", port6); got != want {
				t.Errorf("server saw Host %q, want %q", got, want)
			}
		})
	}
}

func TestHTTPNamedPort(t *testing.T) {
	s := httptest.NewServer(&recorder{})
	defer s.Close()
	_, port := hostPort(t, s.URL)
	ports := []corev1.ContainerPort{{Name: "metrics", ContainerPort: 1}, {Name: "http", ContainerPort: int32(port)}}

	tests := []struct {
		name         string
		port         intstr.IntOrString
		want         Result
		wantMsg      string
		wantAttempts int
	}{
		{"a named port resolves against the container's ports", intstr.FromString("http"), Success, "", 1},
		{"a number written as a string is used as the port", intstr.FromString(fmt.Sprint(port)), Success, "", 1},
		{"an unknown port name is an error with the kubelet's text", intstr.FromString("web"),
			Error, `strconv.Atoi: parsing "web": invalid syntax`, MaxAttempts},
		{"a port out of range is an error", intstr.FromInt32(70000), Error, "invalid port number: 70000", MaxAttempts},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := run(t, httpGetProbe(tc.port, "/"), Target{PodIP: "127.0.0.1", Ports: ports})
			if o.Result != tc.want || o.Message != tc.wantMsg || o.Attempts != tc.wantAttempts {
				t.Errorf("got %v %q after %d attempts, want %v %q after %d", o.Result, o.Message, o.Attempts, tc.want, tc.wantMsg, tc.wantAttempts)
			}
			if tc.want == Error && (o.Err == nil || o.Err.Error() != tc.wantMsg) {
				t.Errorf("Err = %v, want %q", o.Err, tc.wantMsg)
			}
		})
	}
}

func TestHTTPPath(t *testing.T) {
	rec := &recorder{}
	s := httptest.NewServer(rec)
	defer s.Close()
	_, port := hostPort(t, s.URL)

	tests := []struct{ name, path, wantURI string }{
		{"an empty path is /", "", "/"},
		{"a missing leading slash is added", "healthz", "/healthz"},
		{"a query is kept", "/healthz?full=1&x=%20y", "/healthz?full=1&x=%20y"},
		{"a path that does not parse is sent escaped", "/%zz?a=b", "/%25zz%3Fa=b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := run(t, httpGetProbe(intstr.FromInt32(int32(port)), tc.path), Target{PodIP: "127.0.0.1"})
			if o.Result != Success {
				t.Fatalf("result = %v (%s), want success", o.Result, o.Message)
			}
			if got := rec.request(t).RequestURI; got != tc.wantURI {
				t.Errorf("server saw %q, want %q", got, tc.wantURI)
			}
		})
	}
}

func TestHTTPScheme(t *testing.T) {
	plain := httptest.NewServer(&recorder{})
	defer plain.Close()
	_, plainPort := hostPort(t, plain.URL)
	// Self-signed certificate: the kubelet never verifies, so it must pass.
	tlsRec := &recorder{}
	tlsSrv := httptest.NewTLSServer(tlsRec)
	defer tlsSrv.Close()
	_, tlsPort := hostPort(t, tlsSrv.URL)

	tests := []struct {
		name    string
		scheme  corev1.URIScheme
		port    int
		want    Result
		wantMsg string
	}{
		{"the default scheme is http", "", plainPort, Success, ""},
		{"the scheme is lower-cased", "HTTPS", tlsPort, Success, ""},
		{"TLS certificates are never verified", corev1.URISchemeHTTPS, tlsPort, Success, ""},
		{"a scheme net/http cannot speak is a failure", "FTP", plainPort, Failure,
			fmt.Sprintf(`Get "ftp://127.0.0.1:%d/": unsupported protocol scheme "ftp"`, plainPort)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := httpGetProbe(intstr.FromInt32(int32(tc.port)), "/")
			p.HTTPGet.Scheme = tc.scheme
			o := run(t, p, Target{PodIP: "127.0.0.1"})
			if o.Result != tc.want || o.Message != tc.wantMsg {
				t.Errorf("got %v %q, want %v %q", o.Result, o.Message, tc.want, tc.wantMsg)
			}
		})
	}
	if tlsRec.request(t).TLS == nil {
		t.Error("the TLS server saw a request without TLS")
	}
}

func TestHTTPSOffersHTTP2LikeTheKubelet(t *testing.T) {
	rec := &recorder{}
	s := httptest.NewUnstartedServer(rec)
	s.EnableHTTP2 = true
	s.StartTLS()
	defer s.Close()
	_, port := hostPort(t, s.URL)

	p := httpGetProbe(intstr.FromInt32(int32(port)), "/")
	p.HTTPGet.Scheme = corev1.URISchemeHTTPS
	if o := run(t, p, Target{PodIP: "127.0.0.1"}); o.Result != Success {
		t.Fatalf("result = %v (%s), want success", o.Result, o.Message)
	}
	if got := rec.request(t).ProtoMajor; got != 2 {
		t.Errorf("probe spoke HTTP/%d to an h2 server, want HTTP/2 as the kubelet's transport", got)
	}
}

func TestHTTPHeaders(t *testing.T) {
	h := func(kv ...string) []corev1.HTTPHeader {
		var hs []corev1.HTTPHeader
		for i := 0; i < len(kv); i += 2 {
			hs = append(hs, corev1.HTTPHeader{Name: kv[i], Value: kv[i+1]})
		}
		return hs
	}
	tests := []struct {
		name    string
		headers []corev1.HTTPHeader
		header  string
		want    []string // nil: the header is not sent at all
	}{
		{"user headers are added, repeats kept", h("X-Check", "a", "x-check", "b"), "X-Check", []string{"a", "b"}},
		{"the default User-Agent is kube-probe/<major.minor>", nil, "User-Agent", []string{"kube-probe/" + contract.KubeletVersion}},
		{"a user User-Agent replaces the default", h("User-Agent", "mine/1"), "User-Agent", []string{"mine/1"}},
		{"only the first of repeated User-Agents is sent", h("User-Agent", "first", "User-Agent", "second"), "User-Agent", []string{"first"}},
		{"an empty User-Agent sends none", h("User-Agent", ""), "User-Agent", nil},
		{"the default Accept is */*", nil, "Accept", []string{"*/*"}},
		{"a user Accept replaces the default", h("Accept", "application/json"), "Accept", []string{"application/json"}},
		{`Accept ["", x] sends none`, h("Accept", "", "Accept", "text/plain"), "Accept", nil},
		{`Accept [x, ""] sends both`, h("Accept", "text/plain", "Accept", ""), "Accept", []string{"text/plain", ""}},
		{"a Host header sets the request host", h("Host", "app.example.test"), "Host", []string{"app.example.test"}},
		{"keep-alives are off, so Connection: close is sent", nil, "Connection", []string{"close"}},
		{"a user Connection: keep-alive is sent, then close", h("Connection", "keep-alive"), "Connection", []string{"keep-alive", "close"}},
		{"no Accept-Encoding of our own", nil, "Accept-Encoding", nil},
		{"a user Accept-Encoding passes through", h("Accept-Encoding", "gzip"), "Accept-Encoding", []string{"gzip"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newRawServer(t)
			p := httpGetProbe(intstr.FromInt32(int32(s.port())), "/")
			p.HTTPGet.HTTPHeaders = tc.headers
			if o := run(t, p, Target{PodIP: "127.0.0.1"}); o.Result != Success {
				t.Fatalf("result = %v (%s), want success", o.Result, o.Message)
			}
			head := <-s.heads
			if got := headerValues(head, tc.header); !slices.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
				t.Errorf("%s sent as %q, want %q; request:\n%s", tc.header, got, tc.want, strings.Join(head, "\n"))
			}
		})
	}
}

func TestHTTPProxyEnvIsIgnored(t *testing.T) {
	if runner.transport.Proxy != nil {
		t.Fatal("the probe transport consults a proxy")
	}
	rec := &recorder{}
	s := httptest.NewServer(rec)
	defer s.Close()
	_, port := hostPort(t, s.URL)

	// Go never proxies "localhost" or loopback IP literals, whatever the
	// env says, so the probe must name the server some other way for the
	// test to mean anything: this machine's hostname, if it is loopback.
	host, err := loopbackName()
	if err != nil {
		t.Skipf("no hostname here resolves to 127.0.0.1, so a proxy would never be used: %v", err)
	}
	dead := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	for _, k := range []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"} {
		t.Setenv(k, dead)
	}
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")

	p := httpGetProbe(intstr.FromInt32(int32(port)), "/")
	p.HTTPGet.Host = host
	if o := run(t, p, Target{PodIP: "127.0.0.2"}); o.Result != Success {
		t.Fatalf("result = %v (%s), want success straight to the server", o.Result, o.Message)
	}
	if got := rec.request(t).Host; got != fmt.Sprintf("%s:%d", host, port) {
		t.Errorf("server saw Host %q", got)
	}
}

// loopbackName is a name other than "localhost" that resolves to 127.0.0.1.
func loopbackName() (string, error) {
	for _, name := range []string{hostname(), "vm"} {
		if name == "" || name == "localhost" {
			continue
		}
		addrs, err := net.LookupHost(name)
		if err == nil && slices.Contains(addrs, "127.0.0.1") {
			return name, nil
		}
	}
	return "", fmt.Errorf("hostname %q", hostname())
}

func TestHTTPStatus(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var code int
		_, _ = fmt.Sscanf(r.URL.Path, "/%d", &code)
		w.WriteHeader(code)
		_, _ = fmt.Fprintf(w, "body of %d", code)
	}))
	defer s.Close()
	_, port := hostPort(t, s.URL)

	tests := []struct {
		code    int
		want    Result
		wantMsg string
	}{
		{200, Success, ""},
		{204, Success, ""},
		{299, Success, ""},
		{300, Warning, "Probe terminated redirects, Response body: body of 300"},
		{302, Warning, "Probe terminated redirects, Response body: body of 302"}, // no Location
		{304, Warning, "Probe terminated redirects, Response body: "},            // 304 has no body
		{399, Warning, "Probe terminated redirects, Response body: body of 399"},
		{400, Failure, "HTTP probe failed with statuscode: 400"},
		{404, Failure, "HTTP probe failed with statuscode: 404"},
		{500, Failure, "HTTP probe failed with statuscode: 500"},
		{503, Failure, "HTTP probe failed with statuscode: 503"},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%d is %v", tc.code, tc.want), func(t *testing.T) {
			o := run(t, httpGetProbe(intstr.FromInt32(int32(port)), fmt.Sprintf("/%d", tc.code)), Target{PodIP: "127.0.0.1"})
			if o.Result != tc.want || o.Message != tc.wantMsg || o.Attempts != 1 {
				t.Errorf("got %v %q after %d attempts, want %v %q after 1", o.Result, o.Message, o.Attempts, tc.want, tc.wantMsg)
			}
			if o.StatusCode != tc.code {
				t.Errorf("StatusCode = %d, want %d", o.StatusCode, tc.code)
			}
		})
	}
}

func TestHTTPBodyIsReadUpTo10KiB(t *testing.T) {
	big := strings.Repeat("a", 3*MaxHTTPBody)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/warn" {
			w.WriteHeader(http.StatusMultipleChoices)
		}
		_, _ = w.Write([]byte(big))
	}))
	defer s.Close()
	_, port := hostPort(t, s.URL)

	t.Run("a longer body is not an error", func(t *testing.T) {
		o := run(t, httpGetProbe(intstr.FromInt32(int32(port)), "/"), Target{PodIP: "127.0.0.1"})
		if o.Result != Success || o.Attempts != 1 {
			t.Errorf("got %v (%s) after %d attempts, want success after 1", o.Result, o.Message, o.Attempts)
		}
	})
	t.Run("the warning quotes at most 10 KiB of body", func(t *testing.T) {
		o := run(t, httpGetProbe(intstr.FromInt32(int32(port)), "/warn"), Target{PodIP: "127.0.0.1"})
		want := "Probe terminated redirects, Response body: " + big[:MaxHTTPBody]
		if o.Result != Warning || o.Message != want {
			t.Errorf("got %v with a %d-byte message, want warning with %d bytes", o.Result, len(o.Message), len(want))
		}
	})
}

// TestHTTPTransportHasNoProxy pins, on every machine, what
// TestHTTPProxyEnvIsIgnored shows end to end where a hostname resolves to
// loopback: the probes' transport never consults the proxy environment.
func TestHTTPTransportHasNoProxy(t *testing.T) {
	r := NewRunner()
	if r.transport.Proxy != nil {
		t.Fatal("the probe transport has a Proxy function; the kubelet's probes ignore proxy env vars")
	}
}

// TestHTTPMessageHeader: a target naming a message header takes the probe's
// message from the answer (what the gate sends for a routed probe), while
// the verdict still comes from the status code; without the name, or with a
// malformed value, the header is ignored.
func TestHTTPMessageHeader(t *testing.T) {
	const header = "Podgate-Probe-Message"
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var code int
		_, _ = fmt.Sscanf(r.URL.Path, "/%d", &code)
		if v := r.URL.Query().Get("raw"); v != "" {
			w.Header().Set(header, v)
		} else {
			w.Header().Set(header, strconv.Quote("original: "+r.URL.Query().Get("m")))
		}
		if r.URL.Query().Has("short") {
			w.Header().Set("Content-Length", "100")
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, "body")
	}))
	defer s.Close()
	_, port := hostPort(t, s.URL)

	tests := []struct {
		name, path string
		header     string
		want       Result
		wantMsg    string
	}{
		{"success carries no message of its own; the header's is taken", "/200?m=ok", header, Success, "original: ok"},
		{"a warning takes the header's message", "/302?m=moved", header, Warning, "original: moved"},
		{"a failure takes the header's message", "/500?m=dial+tcp+refused", header, Failure, "original: dial tcp refused"},
		{"a probe error takes the header's message", "/500?m=broken&short", header, Error, "original: broken"},
		{"without a header name the header is ignored", "/500?m=x", "", Failure, "HTTP probe failed with statuscode: 500"},
		{"a value that is not Go-quoted is ignored", "/500?raw=plain", header, Failure, "HTTP probe failed with statuscode: 500"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := run(t, httpGetProbe(intstr.FromInt32(int32(port)), tc.path), Target{PodIP: "127.0.0.1", MessageHeader: tc.header})
			msg := o.Message
			if o.Result == Error && o.Err != nil {
				msg = o.Err.Error()
			}
			if o.Result != tc.want || msg != tc.wantMsg {
				t.Errorf("got %v %q, want %v %q", o.Result, msg, tc.want, tc.wantMsg)
			}
		})
	}
}
