package certs

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"testing"
	"time"
)

// TestSignMakesAChainThatVerifiesAndParsesBack: a self-signed CA, a
// server certificate it signs that verifies for its name, and both pairs
// read back from their PEM.
func TestSignMakesAChainThatVerifiesAndParsesBack(t *testing.T) {
	now := time.Now()
	ca, err := Sign(&x509.Certificate{
		Subject: pkix.Name{CommonName: "test-ca"}, NotBefore: now.Add(-time.Minute), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := Sign(&x509.Certificate{
		Subject: pkix.Name{CommonName: "server"}, NotBefore: now.Add(-time.Minute), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"svc.ns.svc"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}, ca)
	if err != nil {
		t.Fatal(err)
	}
	if ca.Cert.SerialNumber.Cmp(leaf.Cert.SerialNumber) == 0 || ca.Cert.SerialNumber.Sign() <= 0 {
		t.Errorf("serial numbers %v and %v: want positive and distinct", ca.Cert.SerialNumber, leaf.Cert.SerialNumber)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	if _, err := leaf.Cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "svc.ns.svc"}); err != nil {
		t.Errorf("the server certificate does not verify against its CA: %v", err)
	}
	for name, kp := range map[string]*KeyPair{"ca": ca, "leaf": leaf} {
		back, err := Parse(kp.CertPEM, kp.KeyPEM)
		if err != nil {
			t.Fatalf("%s: Parse: %v", name, err)
		}
		if !back.Cert.Equal(kp.Cert) {
			t.Errorf("%s: parsed certificate differs", name)
		}
		if _, err := kp.TLSCertificate(); err != nil {
			t.Errorf("%s: TLSCertificate: %v", name, err)
		}
	}
	if _, err := Parse(ca.CertPEM, leaf.KeyPEM); err == nil {
		t.Error("Parse took a certificate with another certificate's key")
	}
}
