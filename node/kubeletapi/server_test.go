package kubeletapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podgate/podgate/internal/certs"
)

func TestAttributesAreTheKubeletsMapping(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		method, path string
		want         Attributes
	}{
		{"GET", "/containerLogs/ns/p/c", Attributes{"get", "n", "proxy"}},
		{"POST", "/exec/ns/p/c", Attributes{"create", "n", "proxy"}},
		{"GET", "/exec/ns/p/c", Attributes{"get", "n", "proxy"}},
		{"POST", "/portForward/ns/p", Attributes{"create", "n", "proxy"}},
		{"POST", "/attach/ns/p/c", Attributes{"create", "n", "proxy"}},
		{"POST", "/run/ns/p/c", Attributes{"create", "n", "proxy"}},
		{"GET", "/logs/", Attributes{"get", "n", "log"}},
		{"GET", "/stats/summary", Attributes{"get", "n", "stats"}},
		{"GET", "/metrics", Attributes{"get", "n", "metrics"}},
		{"GET", "/spec/", Attributes{"get", "n", "spec"}},
		{"PUT", "/pods", Attributes{"update", "n", "proxy"}},
		{"PATCH", "/x", Attributes{"patch", "n", "proxy"}},
		{"DELETE", "/x", Attributes{"delete", "n", "proxy"}},
	} {
		r := httptest.NewRequest(tc.method, tc.path, nil)
		if got := attributesOf(r, "n"); got != tc.want {
			t.Errorf("%s %s: %+v, want %+v", tc.method, tc.path, got, tc.want)
		}
	}
}

// allowOnly allows one user and records what it was asked.
type allowOnly struct {
	user string
	mu   sync.Mutex
	seen []Attributes
}

func (a *allowOnly) Authorize(_ context.Context, u User, attrs Attributes) (bool, string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seen = append(a.seen, attrs)
	return u.Name == a.user, "", nil
}

// fakePods serves one pod's logs.
type fakePods struct{}

func (fakePods) Logs(_ context.Context, ns, pod string, opts corev1.PodLogOptions) (io.ReadCloser, error) {
	if ns != "default" || pod != "p" {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, pod)
	}
	return io.NopCloser(strings.NewReader(opts.Container + " says hello\n")), nil
}

func (fakePods) Exec(context.Context, string, string, string, []string, ExecIO) (int, error) {
	return -1, apierrors.NewBadRequest("no exec here")
}

func (fakePods) DialPort(context.Context, string, string, uint16) (net.Conn, error) {
	return nil, apierrors.NewBadRequest("no ports here")
}

// startTestServer serves the kubelet API for pods with authz on TLS on
// loopback, its certificate of a CA of the test's (ca; pool trusts it);
// sign issues certificates (of parent, a CA when ca is set); other is a
// second CA.
func startTestServer(t *testing.T, authz Authorizer, pods Pods) (srv *httptest.Server, pool *x509.CertPool, sign func(cn string, parent *certs.KeyPair, ca bool, ips ...net.IP) *certs.KeyPair, ca, other *certs.KeyPair) {
	t.Helper()
	sign = func(cn string, parent *certs.KeyPair, isCA bool, ips ...net.IP) *certs.KeyPair {
		tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: cn}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, IPAddresses: ips, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth}}
		if isCA {
			tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage, tmpl.ExtKeyUsage = true, true, x509.KeyUsageCertSign, nil
		}
		kp, err := certs.Sign(tmpl, parent)
		if err != nil {
			t.Fatal(err)
		}
		return kp
	}
	ca, other = sign("ca", nil, true), sign("other", nil, true)
	serving, _ := sign("node", ca, false, net.ParseIP("127.0.0.1")).TLSCertificate()
	pool = x509.NewCertPool()
	pool.AddCert(ca.Cert)
	s, err := New(Config{NodeName: "n", Cert: *serving, ClientCAs: pool, Authorizer: authz, Pods: pods})
	if err != nil {
		t.Fatal(err)
	}
	srv = httptest.NewUnstartedServer(s.Handler())
	srv.TLS = s.TLSConfig()
	// The refused handshakes are the tests' point, not noise to print.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, pool, sign, ca, other
}

func TestCallersAreAuthenticatedByCertificateAndAuthorizedPerRequest(t *testing.T) {
	t.Parallel()
	srv, pool, sign, ca, other := startTestServer(t, &allowOnly{user: "apiserver"}, fakePods{})
	for _, tc := range []struct {
		name     string
		cert     *certs.KeyPair
		path     string
		wantCode int // 0: the handshake fails
		wantBody string
	}{
		{"no certificate: 401", nil, "/containerLogs/default/p/c", 401, "Unauthorized"},
		{"another CA's certificate: the handshake fails", sign("apiserver", other, false), "/containerLogs/default/p/c", 0, ""},
		{"a user not allowed: 403", sign("someone", ca, false), "/containerLogs/default/p/c", 403, "Forbidden (user=someone, verb=get, resource=nodes, subresource=proxy)"},
		{"the allowed user reads logs", sign("apiserver", ca, false), "/containerLogs/default/p/c", 200, "c says hello\n"},
		{"a missing pod is the agent's 404", sign("apiserver", ca, false), "/containerLogs/default/q/c", 404, `pods "q" not found`},
		{"a bad parameter is a 400", sign("apiserver", ca, false), "/containerLogs/default/p/c?tailLines=-1", 400, "tailLines"},
		{"an unknown path is a 404 after authorization", sign("apiserver", ca, false), "/stats/summary", 404, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tlsCfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
			if tc.cert != nil {
				c, _ := tc.cert.TLSCertificate()
				tlsCfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return c, nil }
			}
			hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}, Timeout: 10 * time.Second}
			defer hc.CloseIdleConnections()
			resp, err := hc.Get(srv.URL + tc.path)
			if tc.wantCode == 0 {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("GET %s: %d; want the handshake refused", tc.path, resp.StatusCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantCode || !strings.Contains(string(b), tc.wantBody) {
				t.Errorf("GET %s: %d %q; want %d with %q", tc.path, resp.StatusCode, b, tc.wantCode, tc.wantBody)
			}
		})
	}
}
