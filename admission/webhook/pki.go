package webhook

import (
	"bytes"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/podgate/podgate/internal/certs"
)

// The keys of the certificate Secret. ca.crt, tls.crt and tls.key are the
// names cert-manager and kubectl's TLS secrets use, so the Secret reads
// familiarly; the rest is podgate's own.
const (
	secretCACert     = "ca.crt"        // the CA that signs serving certificates
	secretCAKey      = "ca.key"        //
	secretNextCACert = "next-ca.crt"   // the CA that signs from the next CA rotation on
	secretNextCAKey  = "next-ca.key"   //
	secretBundle     = "ca-bundle.crt" // every CA still trusted: the webhook configurations' caBundle
	secretTLSCert    = "tls.crt"       // the serving certificate
	secretTLSKey     = "tls.key"       //
)

// pkiState is what the Secret holds: the CA that signs, the CA that will
// sign after the next rotation (published in the bundle well before it
// signs anything), the bundle of every CA still trusted, and the serving
// certificate.
type pkiState struct {
	ca, next *certs.KeyPair
	trusted  []*x509.Certificate
	serving  *certs.KeyPair
}

// certPolicy is how certificates are made and when they are replaced.
//
// A certificate is replaced at 2/3 of its lifetime, long before it
// expires. A CA's successor is published before it signs: at half the
// CA's lifetime it is made and joins the bundle, and only at 2/3 does it
// start signing, so the API servers trust a CA for 1/6 of the CA lifetime
// before they meet a certificate signed by it (every replica and every
// API server has the bundle by then). The old CA stays in the bundle
// until it expires; no serving certificate outlives the CA that signed
// it.
type certPolicy struct {
	caLifetime, certLifetime time.Duration
	// hosts are the names (and addresses) the serving certificate must
	// carry; the first is its common name.
	hosts []string
}

// rotateAt is when a certificate is replaced: at 2/3 of its lifetime.
func rotateAt(c *x509.Certificate) time.Time {
	return c.NotBefore.Add(c.NotAfter.Sub(c.NotBefore) * 2 / 3)
}

// publishNextAt is when a CA's successor is made and published: at half
// of the CA's lifetime.
func publishNextAt(c *x509.Certificate) time.Time {
	return c.NotBefore.Add(c.NotAfter.Sub(c.NotBefore) / 2)
}

// advance brings the state up to now: a CA if there is none, its
// successor published at half its lifetime and signing from 2/3, expired
// CAs out of the bundle, and a serving certificate that is signed by the
// current CA, names every host and is not due for rotation. It reports
// whether anything changed and when advance has something to do next.
func (p certPolicy) advance(s pkiState, now time.Time) (pkiState, bool, time.Time, error) {
	changed := false
	var err error
	if s.next != nil && !usableCA(s.next, now) {
		s.next, changed = nil, true
	}
	if s.next != nil && (!usableCA(s.ca, now) || !now.Before(promoteAt(s.ca, s.next))) {
		s.ca, s.next, changed = s.next, nil, true
	}
	if !usableCA(s.ca, now) {
		// Nothing trusted can sign: admission fails until the API
		// server has the new bundle. Only a first start (or a Secret
		// emptied by hand) comes here.
		if s.ca, err = makeCA(now, p.caLifetime); err != nil {
			return s, false, time.Time{}, err
		}
		s.next, changed = nil, true
	}
	if s.next == nil && !now.Before(publishNextAt(s.ca.Cert)) {
		if s.next, err = makeCA(now, p.caLifetime); err != nil {
			return s, false, time.Time{}, err
		}
		changed = true
	}
	trusted := trustedCAs(s, now)
	if !sameCerts(trusted, s.trusted) {
		s.trusted, changed = trusted, true
	}
	if !p.servingIsCurrent(s, now) {
		if s.serving, err = makeServing(s.ca, now, p.certLifetime, p.hosts); err != nil {
			return s, false, time.Time{}, err
		}
		changed = true
	}
	return s, changed, nextChange(s), nil
}

// promoteAt is when the published successor starts signing: at 2/3 of
// the current CA's lifetime, but not before the successor has been in the
// bundle for 1/6 of its own (it may have been made late, when podgate was
// not running at the half; if the current CA expires first, the
// successor takes over then).
func promoteAt(ca, next *certs.KeyPair) time.Time {
	published := next.Cert.NotBefore.Add(next.Cert.NotAfter.Sub(next.Cert.NotBefore) / 6)
	if r := rotateAt(ca.Cert); r.After(published) {
		return r
	}
	return published
}

// servingIsCurrent says whether the serving certificate may stay.
func (p certPolicy) servingIsCurrent(s pkiState, now time.Time) bool {
	c := s.serving
	if c == nil || !now.Before(rotateAt(c.Cert)) || now.Before(c.Cert.NotBefore) {
		return false
	}
	if c.Cert.CheckSignatureFrom(s.ca.Cert) != nil {
		return false
	}
	for _, h := range p.hosts {
		if !namesHost(c.Cert, h) {
			return false
		}
	}
	return true
}

// nextChange is the earliest time advance would change s.
func nextChange(s pkiState) time.Time {
	times := []time.Time{rotateAt(s.serving.Cert), s.ca.Cert.NotAfter}
	if s.next == nil {
		times = append(times, publishNextAt(s.ca.Cert))
	} else {
		times = append(times, promoteAt(s.ca, s.next))
	}
	for _, c := range s.trusted {
		times = append(times, c.NotAfter)
	}
	return slices.MinFunc(times, func(a, b time.Time) int { return a.Compare(b) })
}

// trustedCAs is the bundle: the current and next CA and every earlier CA
// that has not expired (serving certificates it signed may still be in
// use by a replica that has not synced yet), oldest first so that every
// replica writes the same bytes.
func trustedCAs(s pkiState, now time.Time) []*x509.Certificate {
	var out []*x509.Certificate
	add := func(c *x509.Certificate) {
		if c != nil && now.Before(c.NotAfter) && !slices.ContainsFunc(out, c.Equal) {
			out = append(out, c)
		}
	}
	add(s.ca.Cert)
	if s.next != nil {
		add(s.next.Cert)
	}
	for _, c := range s.trusted {
		add(c)
	}
	slices.SortFunc(out, func(a, b *x509.Certificate) int {
		if c := a.NotBefore.Compare(b.NotBefore); c != 0 {
			return c
		}
		return a.SerialNumber.Cmp(b.SerialNumber)
	})
	return out
}

func sameCerts(a, b []*x509.Certificate) bool {
	return slices.EqualFunc(a, b, func(x, y *x509.Certificate) bool { return x.Equal(y) })
}

func usableCA(kp *certs.KeyPair, now time.Time) bool {
	return kp != nil && kp.Cert.IsCA && now.Before(kp.Cert.NotAfter) && !now.Before(kp.Cert.NotBefore)
}

func namesHost(c *x509.Certificate, host string) bool {
	if ip := net.ParseIP(host); ip != nil {
		return slices.ContainsFunc(c.IPAddresses, ip.Equal)
	}
	return slices.Contains(c.DNSNames, host)
}

// backdate is how far before now a certificate starts: a minute of clock
// skew between podgate and the API servers, less for the short
// lifetimes of tests.
func backdate(lifetime time.Duration) time.Duration {
	return min(time.Minute, lifetime/10)
}

func makeCA(now time.Time, lifetime time.Duration) (*certs.KeyPair, error) {
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: fmt.Sprintf("podgate-webhook-ca@%d", now.Unix())},
		NotBefore:             now.Add(-backdate(lifetime)),
		NotAfter:              now.Add(lifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	kp, err := certs.Sign(tmpl, nil)
	if err != nil {
		return nil, fmt.Errorf("make the webhook CA: %w", err)
	}
	return kp, nil
}

// makeServing issues the serving certificate; it ends no later than the
// CA that signs it.
func makeServing(ca *certs.KeyPair, now time.Time, lifetime time.Duration, hosts []string) (*certs.KeyPair, error) {
	if len(hosts) == 0 {
		return nil, errors.New("make the serving certificate: no host to name")
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: hosts[0]},
		NotBefore:   now.Add(-backdate(lifetime)),
		NotAfter:    now.Add(lifetime),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if tmpl.NotAfter.After(ca.Cert.NotAfter) {
		tmpl.NotAfter = ca.Cert.NotAfter
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	kp, err := certs.Sign(tmpl, ca)
	if err != nil {
		return nil, fmt.Errorf("make the serving certificate: %w", err)
	}
	return kp, nil
}

// parseState reads the Secret's data. What is missing or broken comes
// back nil, for advance to replace: a Secret edited by hand or
// half-written heals instead of stopping the webhook.
func parseState(data map[string][]byte) pkiState {
	var s pkiState
	pair := func(certKey, keyKey string) *certs.KeyPair {
		kp, err := certs.Parse(data[certKey], data[keyKey])
		if err != nil {
			return nil
		}
		return kp
	}
	s.ca = pair(secretCACert, secretCAKey)
	s.next = pair(secretNextCACert, secretNextCAKey)
	s.serving = pair(secretTLSCert, secretTLSKey)
	rest := data[secretBundle]
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if c, err := x509.ParseCertificate(block.Bytes); err == nil && c.IsCA {
			s.trusted = append(s.trusted, c)
		}
	}
	return s
}

// data is the state as the Secret stores it.
func (s pkiState) data() map[string][]byte {
	d := map[string][]byte{
		secretCACert:  s.ca.CertPEM,
		secretCAKey:   s.ca.KeyPEM,
		secretBundle:  s.bundlePEM(),
		secretTLSCert: s.serving.CertPEM,
		secretTLSKey:  s.serving.KeyPEM,
	}
	if s.next != nil {
		d[secretNextCACert], d[secretNextCAKey] = s.next.CertPEM, s.next.KeyPEM
	}
	return d
}

// bundlePEM is the caBundle: every trusted CA, oldest first.
func (s pkiState) bundlePEM() []byte {
	var b bytes.Buffer
	for _, c := range s.trusted {
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return b.Bytes()
}
