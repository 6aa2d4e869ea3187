package contract

import (
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// System-internal TLS: with Knative's `system-internal-tls` on, the
// revision's pod mounts the serving certificate in the queue container and
// the activator sends HTTPS to QUEUE_SERVING_TLS_PORT. queue-proxy serves
// that port only when both files exist at its start; its TLS settings come
// from the variables below (knative.dev/pkg's network/tls with the prefix
// QUEUE_PROXY_), written by the revision reconciler from config-deployment's
// queue-sidecar-tls-* keys, empty by default.
const (
	// EnvQueueServingTLSPort is the port of the TLS traffic listener.
	EnvQueueServingTLSPort = "QUEUE_SERVING_TLS_PORT"
	// EnvTLSMinVersion is "1.2" or "1.3"; empty means 1.3.
	EnvTLSMinVersion = "QUEUE_PROXY_TLS_MIN_VERSION"
	// EnvTLSMaxVersion is "1.2" or "1.3"; empty means Go's maximum.
	EnvTLSMaxVersion = "QUEUE_PROXY_TLS_MAX_VERSION"
	// EnvTLSCipherSuites is a comma-separated list of Go's names of the
	// secure cipher suites (tls.CipherSuites); empty means Go's defaults.
	EnvTLSCipherSuites = "QUEUE_PROXY_TLS_CIPHER_SUITES"
	// EnvTLSCurvePreferences is a comma-separated list of curve names
	// (CurveP256 or P-256, CurveP384 or P-384, CurveP521 or P-521, X25519,
	// X25519MLKEM768); empty means Go's defaults.
	EnvTLSCurvePreferences = "QUEUE_PROXY_TLS_CURVE_PREFERENCES"

	// EnvTLSCertDir moves the directory the serving certificate is read
	// from (default KnativeCertDir); tests point it at a directory of
	// their own.
	EnvTLSCertDir = "PODGATE_TLS_CERT_DIR"
)

// The serving certificate as Knative mounts it: the secret serving-certs
// as a volume, its keys as files.
const (
	// GateTLSPort is queue-proxy's TLS traffic port (QUEUE_SERVING_TLS_PORT).
	GateTLSPort = 8112
	// KnativeCertDir is where Knative mounts the secret in the queue
	// container.
	KnativeCertDir = "/var/lib/knative/certs"
	// TLSCertFile and TLSKeyFile are the secret's keys (a kubernetes.io/tls
	// secret): the certificate chain and the private key, PEM.
	TLSCertFile = "tls.crt"
	TLSKeyFile  = "tls.key"
)

// TLSSettings are the serving TLS parameters of QUEUE_PROXY_TLS_*.
type TLSSettings struct {
	// MinVersion and MaxVersion are tls.VersionTLS12 or tls.VersionTLS13;
	// MaxVersion 0 is Go's maximum.
	MinVersion, MaxVersion uint16
	// CipherSuites and CurvePreferences are nil for Go's defaults.
	CipherSuites     []uint16
	CurvePreferences []tls.CurveID
}

// DefaultTLSSettings are those of an environment that sets none: TLS 1.3
// at least, as knative.dev/pkg's DefaultConfigFromEnv.
func DefaultTLSSettings() TLSSettings { return TLSSettings{MinVersion: tls.VersionTLS13} }

// ServerConfig is a new tls.Config with the settings; the caller adds the
// certificate.
func (s TLSSettings) ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion:       s.MinVersion,
		MaxVersion:       s.MaxVersion,
		CipherSuites:     slices.Clone(s.CipherSuites),
		CurvePreferences: slices.Clone(s.CurvePreferences),
	}
}

// ParseTLSSettings reads the four QUEUE_PROXY_TLS_* values as queue-proxy
// does: empty means unset; versions are exactly "1.2" or "1.3"; lists are
// comma-separated, each name trimmed, empty entries skipped; cipher suites
// are Go's names of its secure suites, curves Go's constant names or the
// standard ones (P-256). Every problem is reported, each naming its
// variable. Two settings queue-proxy starts with and then fails on are
// errors here: a maximum below the minimum (every handshake fails), and
// with TLS 1.2 allowed a list of cipher suites without the one HTTP/2
// requires (its TLS server exits).
func ParseTLSSettings(minVersion, maxVersion, cipherSuites, curves string) (TLSSettings, error) {
	s := DefaultTLSSettings()
	var errs []error
	fail := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
	}
	minOK := true
	if minVersion != "" {
		v, ok := tlsVersions[minVersion]
		if ok {
			s.MinVersion = v
		} else {
			minOK = false
			fail(EnvTLSMinVersion, "%q is not a TLS version: must be \"1.2\" or \"1.3\"", minVersion)
		}
	}
	if maxVersion != "" {
		v, ok := tlsVersions[maxVersion]
		switch {
		case !ok:
			fail(EnvTLSMaxVersion, "%q is not a TLS version: must be \"1.2\" or \"1.3\"", maxVersion)
		case minOK && v < s.MinVersion:
			lo := minVersion
			if lo == "" {
				lo = "1.3, the default of " + EnvTLSMinVersion
			}
			fail(EnvTLSMaxVersion, "%q is below the minimum version (%s): no handshake could succeed", maxVersion, lo)
		default:
			s.MaxVersion = v
		}
	}
	suites := cipherSuiteIDs()
	for _, name := range listEntries(cipherSuites) {
		id, ok := suites[name]
		if !ok {
			fail(EnvTLSCipherSuites, "unknown cipher suite %q (Go's names of its secure suites, e.g. TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256)", name)
			continue
		}
		s.CipherSuites = append(s.CipherSuites, id)
	}
	for _, name := range listEntries(curves) {
		id, ok := curveIDs[name]
		if !ok {
			fail(EnvTLSCurvePreferences, "unknown curve %q (one of CurveP256, CurveP384, CurveP521, X25519, X25519MLKEM768, P-256, P-384, P-521)", name)
			continue
		}
		s.CurvePreferences = append(s.CurvePreferences, id)
	}
	// net/http refuses to serve HTTP/2 over TLS with such a list (so
	// queue-proxy's TLS server exits at its start).
	if len(s.CipherSuites) > 0 && s.MinVersion < tls.VersionTLS13 && !slices.ContainsFunc(s.CipherSuites, func(id uint16) bool {
		return id == tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 || id == tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
	}) {
		fail(EnvTLSCipherSuites, "with TLS 1.2 allowed, HTTP/2 needs TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 or TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 in the list (queue-proxy's TLS server fails to start without)")
	}
	if len(errs) > 0 {
		return DefaultTLSSettings(), errors.Join(errs...)
	}
	return s, nil
}

// Env is the settings as the four variables' values, "" where the
// default holds: ParseTLSSettings reads them back to the same settings.
func (s TLSSettings) Env() (minVersion, maxVersion, cipherSuites, curves string) {
	if s.MinVersion != DefaultTLSSettings().MinVersion {
		minVersion = tlsVersionName(s.MinVersion)
	}
	maxVersion = tlsVersionName(s.MaxVersion)
	names := make([]string, 0, len(s.CipherSuites))
	for _, id := range s.CipherSuites {
		names = append(names, tls.CipherSuiteName(id))
	}
	cipherSuites = strings.Join(names, ",")
	names = names[:0]
	for _, id := range s.CurvePreferences {
		names = append(names, curveNames[id])
	}
	curves = strings.Join(names, ",")
	return minVersion, maxVersion, cipherSuites, curves
}

var tlsVersions = map[string]uint16{"1.2": tls.VersionTLS12, "1.3": tls.VersionTLS13}

func tlsVersionName(v uint16) string {
	for name, id := range tlsVersions {
		if id == v {
			return name
		}
	}
	return ""
}

// listEntries splits a comma-separated list, trims each entry and skips
// the empty ones, as queue-proxy's parser does.
func listEntries(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// cipherSuiteIDs are the suites queue-proxy accepts by name: Go's secure
// ones (tls.CipherSuites), never tls.InsecureCipherSuites.
func cipherSuiteIDs() map[string]uint16 {
	m := map[string]uint16{}
	for _, cs := range tls.CipherSuites() {
		m[cs.Name] = cs.ID
	}
	return m
}

// curveIDs are the curve names queue-proxy accepts.
var curveIDs = map[string]tls.CurveID{
	"CurveP256":      tls.CurveP256,
	"CurveP384":      tls.CurveP384,
	"CurveP521":      tls.CurveP521,
	"X25519":         tls.X25519,
	"X25519MLKEM768": tls.X25519MLKEM768,
	"P-256":          tls.CurveP256,
	"P-384":          tls.CurveP384,
	"P-521":          tls.CurveP521,
}

// curveNames writes a curve with Go's constant name.
var curveNames = map[tls.CurveID]string{
	tls.CurveP256:      "CurveP256",
	tls.CurveP384:      "CurveP384",
	tls.CurveP521:      "CurveP521",
	tls.X25519:         "X25519",
	tls.X25519MLKEM768: "X25519MLKEM768",
}
