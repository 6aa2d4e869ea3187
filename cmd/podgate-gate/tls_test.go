package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podgate/podgate/internal/certs"
	"github.com/podgate/podgate/test/queueenv"
	"github.com/podgate/podgate/test/secretvolume"
)

// servingName is the name the serving certificates are issued for; the
// clients ask for it (SNI and verification) while dialing 127.0.0.1.
const servingName = "kn-user-default"

// servingCA issues the serving certificates of one test; clients trust it.
type servingCA struct {
	ca   *certs.KeyPair
	pool *x509.CertPool
}

func newServingCA(t *testing.T) *servingCA {
	t.Helper()
	ca, err := certs.Sign(&x509.Certificate{
		Subject: pkix.Name{CommonName: "test serving CA"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return &servingCA{ca: ca, pool: pool}
}

// mount issues a serving certificate (serial in its subject's
// organizational unit, to tell rotations apart) and writes it into dir as
// the kubelet writes Knative's serving-certs secret volume: tls.crt and
// tls.key through a ..data symbolic link swapped atomically.
func (s *servingCA) mount(t *testing.T, dir, generation string) {
	t.Helper()
	kp, err := certs.Sign(&x509.Certificate{
		Subject:   pkix.Name{CommonName: servingName, OrganizationalUnit: []string{generation}},
		DNSNames:  []string{servingName},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, s.ca)
	if err != nil {
		t.Fatal(err)
	}
	if err := secretvolume.Write(dir, map[string][]byte{"tls.crt": kp.CertPEM, "tls.key": kp.KeyPEM, "ca.crt": s.ca.CertPEM}); err != nil {
		t.Fatal(err)
	}
}

// client dials the gate's TLS port with a fresh connection per request
// (so each request is a handshake) within the TLS versions given. It
// speaks HTTP/1.1, as Knative's activator does to an HTTP/1 revision.
func (s *servingCA) client(minVersion, maxVersion uint16) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy: nil, DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{RootCAs: s.pool, ServerName: servingName, MinVersion: minVersion, MaxVersion: maxVersion},
	}}
}

// appServer is the serving container: it answers with what the gate told
// it of the request.
func appServer(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, "app saw %s %s proto=%s", r.Method, r.URL.Path, r.Header.Get("X-Forwarded-Proto"))
	}), ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// get polls url with client until the app answers through the gate.
func (g *queueGate) get(t *testing.T, client *http.Client, url string) *http.Response {
	t.Helper()
	var resp *http.Response
	g.poll(t, "a 200 through the gate at "+url, func() (bool, string) {
		r, err := client.Get(url)
		if err != nil {
			return false, err.Error()
		}
		if r.StatusCode != http.StatusOK {
			r.Body.Close()
			return false, r.Status
		}
		resp = r
		return true, ""
	})
	return resp
}

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestTheGateServesKnativesTLSPort(t *testing.T) {
	bin := gateBinary(t)

	t.Run("with the certificate mounted an HTTPS request reaches the serving container, and health checks are answered there too", func(t *testing.T) {
		ca, dir := newServingCA(t), filepath.Join(t.TempDir(), "certs")
		ca.mount(t, dir, "first")
		g := startQueueGate(t, bin, queueenv.Revision{UserPort: appServer(t)}, "PODGATE_TLS_CERT_DIR="+dir)
		resp := g.get(t, ca.client(0, 0), "https://"+g.tlsAddr+"/hello")
		if got := body(t, resp); got != "app saw GET /hello proto=https" {
			t.Errorf("the app answered %q", got)
		}
		if resp.TLS.Version != tls.VersionTLS13 {
			t.Errorf("negotiated TLS %x, want 1.3", resp.TLS.Version)
		}
		// HTTP/2 is offered by ALPN, as on queue-proxy's TLS port.
		conn, err := tls.Dial("tcp", g.tlsAddr, &tls.Config{RootCAs: ca.pool, ServerName: servingName, NextProtos: []string{"h2", "http/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		if p := conn.ConnectionState().NegotiatedProtocol; p != "h2" {
			t.Errorf("ALPN chose %q, want h2", p)
		}
		conn.Close()
		req, _ := http.NewRequest(http.MethodGet, "https://"+g.tlsAddr+"/anything", nil)
		req.Header.Set("User-Agent", "kube-probe/1.34")
		req.Header.Set("K-Network-Probe", "queue")
		hc, err := ca.client(0, 0).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if got := body(t, hc); hc.StatusCode != http.StatusOK || got != "queue" {
			t.Errorf("a health check on the TLS port: %s %q, want 200 queue", hc.Status, got)
		}
		// The plain traffic port serves as before.
		if got := body(t, g.get(t, http.DefaultClient, g.url+"/plain")); got != "app saw GET /plain proto=http" {
			t.Errorf("through the plain port the app answered %q", got)
		}
	})

	t.Run("a rotated certificate (the secret volume's ..data swapped) is served to the next connection without a restart", func(t *testing.T) {
		ca, dir := newServingCA(t), filepath.Join(t.TempDir(), "certs")
		ca.mount(t, dir, "first")
		g := startQueueGate(t, bin, queueenv.Revision{UserPort: appServer(t)}, "PODGATE_TLS_CERT_DIR="+dir)
		client := ca.client(0, 0)
		resp := g.get(t, client, "https://"+g.tlsAddr+"/")
		body(t, resp)
		if got := resp.TLS.PeerCertificates[0].Subject.OrganizationalUnit; len(got) != 1 || got[0] != "first" {
			t.Fatalf("served %v before the rotation", got)
		}
		for _, gen := range []string{"second", "third"} {
			ca.mount(t, dir, gen)
			resp, err := client.Get("https://" + g.tlsAddr + "/")
			if err != nil {
				t.Fatalf("after rotating to %s: %v\n%s", gen, err, g.stderr.String())
			}
			body(t, resp)
			if got := resp.TLS.PeerCertificates[0].Subject.OrganizationalUnit; len(got) != 1 || got[0] != gen {
				t.Errorf("the first connection after rotating to %s got %v", gen, got)
			}
		}
		select {
		case <-g.exited:
			t.Fatalf("the gate exited (%v): a rotation must not need a restart\n%s", g.exitErr, g.stderr.String())
		default:
		}
		if n := strings.Count(g.stderr.String(), "serving certificate reloaded"); n != 2 {
			t.Errorf("%d reloads logged for two rotations\n%s", n, g.stderr.String())
		}
	})

	t.Run("QUEUE_PROXY_TLS_MIN_VERSION unset is TLS 1.3: a client limited to TLS 1.2 fails its handshake", func(t *testing.T) {
		ca, dir := newServingCA(t), filepath.Join(t.TempDir(), "certs")
		ca.mount(t, dir, "first")
		g := startQueueGate(t, bin, queueenv.Revision{UserPort: appServer(t)}, "PODGATE_TLS_CERT_DIR="+dir)
		body(t, g.get(t, ca.client(0, 0), "https://"+g.tlsAddr+"/"))
		_, err := ca.client(tls.VersionTLS12, tls.VersionTLS12).Get("https://" + g.tlsAddr + "/")
		if err == nil || !strings.Contains(err.Error(), "protocol version") {
			t.Errorf("a TLS 1.2 client: %v, want a protocol version alert", err)
		}
	})

	t.Run("QUEUE_PROXY_TLS_MIN_VERSION and MAX_VERSION 1.2 are honoured both ways", func(t *testing.T) {
		ca, dir := newServingCA(t), filepath.Join(t.TempDir(), "certs")
		ca.mount(t, dir, "first")
		g := startQueueGate(t, bin, queueenv.Revision{UserPort: appServer(t), TLSMinVersion: "1.2", TLSMaxVersion: "1.2",
			TLSCipherSuites: "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"}, "PODGATE_TLS_CERT_DIR="+dir)
		resp := g.get(t, ca.client(tls.VersionTLS12, tls.VersionTLS12), "https://"+g.tlsAddr+"/")
		body(t, resp)
		if cs := resp.TLS.CipherSuite; resp.TLS.Version != tls.VersionTLS12 ||
			cs != tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 && cs != tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 {
			t.Errorf("negotiated TLS %x with %s, want 1.2 with a suite of QUEUE_PROXY_TLS_CIPHER_SUITES", resp.TLS.Version, tls.CipherSuiteName(cs))
		}
		// A client whose only suite is not in the list finds none in common.
		chacha := ca.client(tls.VersionTLS12, tls.VersionTLS12)
		chacha.Transport.(*http.Transport).TLSClientConfig.CipherSuites = []uint16{tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256}
		if _, err := chacha.Get("https://" + g.tlsAddr + "/"); err == nil || !strings.Contains(err.Error(), "handshake failure") {
			t.Errorf("a client with a suite outside QUEUE_PROXY_TLS_CIPHER_SUITES: %v, want a handshake failure", err)
		}
		if _, err := ca.client(tls.VersionTLS13, 0).Get("https://" + g.tlsAddr + "/"); err == nil || !strings.Contains(err.Error(), "protocol version") {
			t.Errorf("a TLS 1.3-only client: %v, want a protocol version alert", err)
		}
	})

	t.Run("without the certificate at start the TLS port stays closed, even once it is mounted, while the traffic port serves", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "certs")
		g := startQueueGate(t, bin, queueenv.Revision{UserPort: appServer(t)}, "PODGATE_TLS_CERT_DIR="+dir)
		body(t, g.get(t, http.DefaultClient, g.url+"/"))
		newServingCA(t).mount(t, dir, "late") // as queue-proxy, only the start decides
		body(t, g.get(t, http.DefaultClient, g.url+"/"))
		conn, err := net.DialTimeout("tcp", g.tlsAddr, 5*time.Second)
		if err == nil {
			conn.Close()
			t.Fatalf("something listens on the TLS port %s", g.tlsAddr)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("dialing the TLS port: %v, want connection refused", err)
		}
	})

	for _, tc := range []struct {
		name  string
		rev   queueenv.Revision
		mount func(t *testing.T, dir string)
		want  string
	}{
		{"a malformed TLS setting stops the gate at start, naming the variable",
			queueenv.Revision{TLSMinVersion: "1.1"}, nil, `QUEUE_PROXY_TLS_MIN_VERSION: "1.1" is not a TLS version`},
		{"a mounted certificate that does not load stops the gate at start, naming the file",
			queueenv.Revision{}, func(t *testing.T, dir string) {
				if err := secretvolume.Write(dir, map[string][]byte{"tls.crt": []byte("not PEM"), "tls.key": []byte("no")}); err != nil {
					t.Fatal(err)
				}
			}, "QUEUE_SERVING_TLS_PORT 127.0.0.1:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "certs")
			if tc.mount != nil {
				tc.mount(t, dir)
			}
			tc.rev.Namespace, tc.rev.Configuration, tc.rev.Revision, tc.rev.Pod, tc.rev.PodIP = "default", "hello", "hello-00001", "p", "127.0.0.1"
			tc.rev.ServingPort, tc.rev.TLSPort, tc.rev.UserPort = freePort(t), freePort(t), freePort(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin)
			cmd.Env = append(tc.rev.Env(), "PODGATE_ADMIN_PORT=0", "PODGATE_METRICS_PORT=0", "PODGATE_AUTOSCALER_PORT=0", "PODGATE_TLS_CERT_DIR="+dir)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), tc.want) {
				t.Errorf("exit %v, output %s; want exit 1 and %q", err, out, tc.want)
			}
			if tc.mount != nil && !strings.Contains(string(out), filepath.Join(dir, "tls.crt")) {
				t.Errorf("the error does not name the certificate file:\n%s", out)
			}
		})
	}
}
