package controlplane

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/podgate/podgate/internal/certs"
)

// certValidity is how long every certificate of a control plane is valid:
// a control plane made here lives for a test or a benchmark, a year is
// plenty and keeps a long-running one from expiring under it.
const certValidity = 365 * 24 * time.Hour

// certSpec says what a certificate is for.
type certSpec struct {
	commonName string
	orgs       []string // groups, for a client certificate
	dnsNames   []string
	ips        []net.IP
	server     bool
	client     bool
}

// newCA makes a self-signed certificate authority.
func newCA(commonName string) (*certs.KeyPair, error) {
	now := time.Now()
	return certs.Sign(&x509.Certificate{
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-time.Hour), // tolerate a clock a little behind
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}, nil)
}

// issue makes a certificate signed by ca.
func issue(ca *certs.KeyPair, spec certSpec) (*certs.KeyPair, error) {
	now := time.Now()
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: spec.commonName, Organization: spec.orgs},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(certValidity),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		DNSNames:    spec.dnsNames,
		IPAddresses: spec.ips,
	}
	if spec.server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if spec.client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	return certs.Sign(tmpl, ca)
}

// write saves the pair as NAME.crt and NAME.key in dir (the key readable
// by its owner only) and returns both paths.
func writePair(kp *certs.KeyPair, dir, name string) (certFile, keyFile string, err error) {
	certFile = filepath.Join(dir, name+".crt")
	keyFile = filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, kp.CertPEM, 0o644); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(keyFile, kp.KeyPEM, 0o600); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

// writeServiceAccountKey writes the key pair the API server signs
// service-account tokens with (sa.key) and verifies them by (sa.pub).
func writeServiceAccountKey(dir string) (keyFile, pubFile string, err error) {
	key, keyPEM, err := certs.NewKey()
	if err != nil {
		return "", "", err
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return "", "", fmt.Errorf("encode service-account public key: %w", err)
	}
	keyFile = filepath.Join(dir, "sa.key")
	pubFile = filepath.Join(dir, "sa.pub")
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644); err != nil {
		return "", "", err
	}
	return keyFile, pubFile, nil
}
