package servingtls

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/podgate/podgate/internal/certs"
	"github.com/podgate/podgate/test/secretvolume"
	"github.com/podgate/podgate/test/syncbuf"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newPair is a self-signed serving certificate named cn.
func newPair(t testing.TB, cn string) *certs.KeyPair {
	t.Helper()
	kp, err := certs.Sign(&x509.Certificate{
		Subject: pkix.Name{CommonName: cn}, DNSNames: []string{cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

// mount writes the pair into dir as the kubelet updates a secret volume.
func mount(t testing.TB, dir string, kp *certs.KeyPair) {
	t.Helper()
	if err := secretvolume.Write(dir, map[string][]byte{"tls.crt": kp.CertPEM, "tls.key": kp.KeyPEM}); err != nil {
		t.Fatal(err)
	}
}

func load(t testing.TB, dir string) (*Certificate, *syncbuf.Buffer) {
	t.Helper()
	logs := &syncbuf.Buffer{}
	c, err := Load(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return c, logs
}

// served is the common name of the certificate a handshake gets now.
func served(t testing.TB, c *Certificate) string {
	t.Helper()
	cert, err := c.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil || cert == nil {
		t.Fatalf("GetCertificate: %v, %v", cert, err)
	}
	return cert.Leaf.Subject.CommonName
}

func TestMountedIsBothFilesPresentAsQueueProxyDecides(t *testing.T) {
	dir := t.TempDir()
	mount(t, filepath.Join(dir, "both"), newPair(t, "a"))
	if err := os.MkdirAll(filepath.Join(dir, "certonly"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "certonly", "tls.crt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "afile"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		dir     string
		want    bool
		wantErr string
	}{
		{"both files, through the secret volume's symbolic links", "both", true, ""},
		{"only the certificate", "certonly", false, ""},
		{"no directory", "absent", false, ""},
		{"a path that cannot be a directory is an error, not absence", "afile", false, "not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Mounted(filepath.Join(dir, tt.dir), "tls.crt", "tls.key")
			if got != tt.want || (err == nil) != (tt.wantErr == "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Mounted = %v, %v; want %v, error containing %q", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestLoadRefusesWhatCannotServe(t *testing.T) {
	dir := t.TempDir()
	a, b := newPair(t, "a"), newPair(t, "b")
	tests := []struct {
		name       string
		cert, key  []byte
		wantErrHas string
	}{
		{"the key of another certificate", a.CertPEM, b.KeyPEM, "private key does not match public key"},
		{"not PEM", []byte("nope"), a.KeyPEM, "tls.crt with key"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := filepath.Join(dir, string(rune('a'+i)))
			if err := secretvolume.Write(d, map[string][]byte{"tls.crt": tt.cert, "tls.key": tt.key}); err != nil {
				t.Fatal(err)
			}
			if _, err := Load(filepath.Join(d, "tls.crt"), filepath.Join(d, "tls.key"), nil); err == nil || !strings.Contains(err.Error(), tt.wantErrHas) {
				t.Errorf("Load: %v, want an error containing %q", err, tt.wantErrHas)
			}
		})
	}
	if _, err := Load(filepath.Join(dir, "none", "tls.crt"), filepath.Join(dir, "none", "tls.key"), nil); err == nil ||
		!strings.Contains(err.Error(), "no such file") {
		t.Errorf("Load of missing files: %v", err)
	}
}

func TestARotatedCertificateIsServedAtTheNextHandshake(t *testing.T) {
	dir := t.TempDir()
	mount(t, dir, newPair(t, "first"))
	c, logs := load(t, dir)
	if got := served(t, c); got != "first" {
		t.Fatalf("served %q before the rotation", got)
	}
	mount(t, dir, newPair(t, "second"))
	if got := served(t, c); got != "second" {
		t.Fatalf("served %q after the ..data swap, want the new certificate", got)
	}
	if n := strings.Count(logs.String(), "serving certificate reloaded"); n != 1 {
		t.Errorf("%d reload lines, want 1:\n%s", n, logs)
	}
	mount(t, dir, newPair(t, "third"))
	if got := served(t, c); got != "third" {
		t.Fatalf("served %q after the second rotation", got)
	}
}

func TestTheSameContentsRewrittenAreNotAReload(t *testing.T) {
	dir := t.TempDir()
	kp := newPair(t, "same")
	mount(t, dir, kp)
	c, logs := load(t, dir)
	before := c.Current()
	mount(t, dir, kp) // new files (new inodes), same bytes
	if cert, _ := c.GetCertificate(nil); cert != before {
		t.Error("the same certificate was parsed again")
	}
	if strings.Contains(logs.String(), "reloaded") {
		t.Errorf("logged a reload of unchanged contents:\n%s", logs)
	}
}

func TestAFileRewrittenInPlaceIsReloaded(t *testing.T) {
	dir := t.TempDir()
	first, second := newPair(t, "first"), newPair(t, "second-with-a-longer-name")
	for name, b := range map[string][]byte{"tls.crt": first.CertPEM, "tls.key": first.KeyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c, _ := load(t, dir)
	// Key first: in between, the pair does not match and the old one is kept.
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), second.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := served(t, c); got != "first" {
		t.Fatalf("served %q with a mismatched pair on disk, want the last good one", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), second.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := served(t, c); got != "second-with-a-longer-name" {
		t.Fatalf("served %q once both files were rewritten", got)
	}
}

func TestABrokenRotationKeepsTheLastGoodCertificateAndLogsOnce(t *testing.T) {
	dir := t.TempDir()
	mount(t, dir, newPair(t, "good"))
	c, logs := load(t, dir)
	a, b := newPair(t, "a"), newPair(t, "b")
	if err := secretvolume.Write(dir, map[string][]byte{"tls.crt": a.CertPEM, "tls.key": b.KeyPEM}); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if got := served(t, c); got != "good" {
			t.Fatalf("served %q after a broken rotation", got)
		}
	}
	if n := strings.Count(logs.String(), "does not load"); n != 1 {
		t.Errorf("%d warnings for one broken rotation, want 1:\n%s", n, logs)
	}
	mount(t, dir, newPair(t, "fixed"))
	if got := served(t, c); got != "fixed" {
		t.Errorf("served %q after the fix", got)
	}
}

func TestRemovedFilesKeepTheLastCertificateAndLogOnce(t *testing.T) {
	dir := t.TempDir()
	mount(t, dir, newPair(t, "kept"))
	c, logs := load(t, dir)
	if err := os.Remove(filepath.Join(dir, "tls.key")); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if got := served(t, c); got != "kept" {
			t.Fatalf("served %q with the key gone", got)
		}
	}
	if n := strings.Count(logs.String(), "unreadable"); n != 1 {
		t.Errorf("%d warnings for a missing key, want 1:\n%s", n, logs)
	}
	// The key back (a new pair), then gone again: a second warning.
	mount(t, dir, newPair(t, "back"))
	if got := served(t, c); got != "back" {
		t.Fatalf("served %q once the files were back", got)
	}
	if err := os.Remove(filepath.Join(dir, "tls.key")); err != nil {
		t.Fatal(err)
	}
	if got := served(t, c); got != "back" {
		t.Fatalf("served %q with the key gone again", got)
	}
	if n := strings.Count(logs.String(), "unreadable"); n != 2 {
		t.Errorf("%d warnings for a key missing twice, want 2:\n%s", n, logs)
	}
}

// TestHandshakesDuringRotationsAlwaysGetACertificate: under the race
// detector, handshakes racing with rotations always get a whole
// certificate, and after the last rotation the last one.
func TestHandshakesDuringRotationsAlwaysGetACertificate(t *testing.T) {
	dir := t.TempDir()
	pairs := make([]*certs.KeyPair, 10)
	for i := range pairs {
		pairs[i] = newPair(t, "gen-"+string(rune('0'+i)))
	}
	mount(t, dir, pairs[0])
	c, _ := load(t, dir)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if cert, err := c.GetCertificate(nil); err != nil || cert == nil || cert.Leaf == nil {
					t.Errorf("GetCertificate: %v, %v", cert, err)
					return
				}
			}
		}()
	}
	for _, kp := range pairs[1:] {
		mount(t, dir, kp)
	}
	close(stop)
	wg.Wait()
	if got := served(t, c); got != "gen-9" {
		t.Errorf("served %q after the last rotation", got)
	}
}

// BenchmarkGetCertificateUnchanged is the cost TLS pays per handshake for
// noticing rotations: two stat calls.
func BenchmarkGetCertificateUnchanged(b *testing.B) {
	dir := b.TempDir()
	mount(b, dir, newPair(b, "bench"))
	c, _ := load(b, dir)
	for b.Loop() {
		if _, err := c.GetCertificate(nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHandshake is a whole TLS 1.3 handshake over an in-memory
// connection (client and server in this process), the certificate
// static or from Certificate: the difference is what noticing rotations
// costs a connection.
func BenchmarkHandshake(b *testing.B) {
	dir := b.TempDir()
	kp := newPair(b, "bench")
	mount(b, dir, kp)
	c, _ := load(b, dir)
	pool := x509.NewCertPool()
	pool.AddCert(kp.Cert)
	for _, bc := range []struct {
		name string
		get  func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	}{
		{"static", func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return c.Current(), nil }},
		{"reloading", c.GetCertificate},
	} {
		b.Run(bc.name, func(b *testing.B) {
			srvCfg := &tls.Config{MinVersion: tls.VersionTLS13, GetCertificate: bc.get}
			cliCfg := &tls.Config{RootCAs: pool, ServerName: "bench"}
			for b.Loop() {
				cc, sc := net.Pipe()
				errs := make(chan error, 1)
				go func() { errs <- tls.Server(sc, srvCfg).Handshake() }()
				if err := tls.Client(cc, cliCfg).Handshake(); err != nil {
					b.Fatal(err)
				}
				if err := <-errs; err != nil {
					b.Fatal(err)
				}
				cc.Close()
				sc.Close()
			}
		})
	}
}
