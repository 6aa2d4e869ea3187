package contract

import (
	"crypto/tls"
	"reflect"
	"strings"
	"testing"
)

func TestParseTLSSettingsReadsQueueProxysFormats(t *testing.T) {
	def := DefaultTLSSettings()
	tests := []struct {
		name                       string
		minV, maxV, suites, curves string
		want                       TLSSettings
	}{
		{"nothing set is TLS 1.3 at least and Go's defaults", "", "", "", "", def},
		{"minimum 1.2", "1.2", "", "", "", TLSSettings{MinVersion: tls.VersionTLS12}},
		{"maximum 1.3 with the default minimum", "", "1.3", "", "", TLSSettings{MinVersion: tls.VersionTLS13, MaxVersion: tls.VersionTLS13}},
		{"only 1.2", "1.2", "1.2", "", "", TLSSettings{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12}},
		{"TLS 1.3 only needs no HTTP/2 suite (its suites are not configurable)", "", "", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "",
			TLSSettings{MinVersion: tls.VersionTLS13, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384}}},
		{"cipher suites trimmed, empty entries skipped, order and repeats kept",
			"1.2", "", " TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 ,,TLS_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,", "",
			TLSSettings{MinVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}}},
		{"a list of separators only is unset", "", "", " , ,", ",", def},
		{"curves by Go's names and the standard ones", "", "", "", "X25519, P-256,CurveP384,P-521,X25519MLKEM768",
			TLSSettings{MinVersion: tls.VersionTLS13, CurvePreferences: []tls.CurveID{tls.X25519, tls.CurveP256, tls.CurveP384, tls.CurveP521, tls.X25519MLKEM768}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTLSSettings(tt.minV, tt.maxV, tt.suites, tt.curves)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseTLSSettingsNamesTheVariableOfEachProblem(t *testing.T) {
	tests := []struct {
		name                       string
		minV, maxV, suites, curves string
		want                       []string
	}{
		{"TLS 1.1 is not accepted", "1.1", "", "", "", []string{`QUEUE_PROXY_TLS_MIN_VERSION: "1.1" is not a TLS version: must be "1.2" or "1.3"`}},
		{"no spaces around a version", "", "1.3 ", "", "", []string{`QUEUE_PROXY_TLS_MAX_VERSION: "1.3 " is not a TLS version`}},
		{"Go's constant names are not versions", "VersionTLS12", "", "", "", []string{`QUEUE_PROXY_TLS_MIN_VERSION: "VersionTLS12"`}},
		{"a maximum below the default minimum fails every handshake", "", "1.2", "", "", []string{`QUEUE_PROXY_TLS_MAX_VERSION: "1.2" is below the minimum version (1.3, the default of QUEUE_PROXY_TLS_MIN_VERSION)`}},
		{"a maximum below the minimum", "1.3", "1.2", "", "", []string{`QUEUE_PROXY_TLS_MAX_VERSION: "1.2" is below the minimum version (1.3)`}},
		{"an insecure suite is unknown, as to queue-proxy", "", "", "TLS_RSA_WITH_RC4_128_SHA", "", []string{`QUEUE_PROXY_TLS_CIPHER_SUITES: unknown cipher suite "TLS_RSA_WITH_RC4_128_SHA"`}},
		{"suite names are case-sensitive", "", "", "tls_aes_128_gcm_sha256", "", []string{`QUEUE_PROXY_TLS_CIPHER_SUITES: unknown cipher suite "tls_aes_128_gcm_sha256"`}},
		{"HTTP/2's required suite missing while TLS 1.2 is allowed", "1.2", "", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "",
			[]string{"QUEUE_PROXY_TLS_CIPHER_SUITES: with TLS 1.2 allowed, HTTP/2 needs TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}},
		{"an unknown curve", "", "", "", "X448", []string{`QUEUE_PROXY_TLS_CURVE_PREFERENCES: unknown curve "X448"`}},
		{"every problem at once", "1.0", "2", "NOPE", "secp256r1", []string{
			"QUEUE_PROXY_TLS_MIN_VERSION:", "QUEUE_PROXY_TLS_MAX_VERSION:", "QUEUE_PROXY_TLS_CIPHER_SUITES:", "QUEUE_PROXY_TLS_CURVE_PREFERENCES:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTLSSettings(tt.minV, tt.maxV, tt.suites, tt.curves)
			if err == nil {
				t.Fatalf("accepted: %+v", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestDecodeReadsTheTLSPortSettingsAndCertificateDirectory(t *testing.T) {
	c, err := Decode(getter(map[string]string{
		EnvQueueServingTLSPort: "8443", EnvTLSMinVersion: "1.2", EnvTLSCipherSuites: "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
		EnvTLSCertDir: "/run/certs",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := TLSSettings{MinVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}}
	if c.TLSPort != 8443 || c.TLSCertDir != "/run/certs" || !reflect.DeepEqual(c.TLS, want) {
		t.Errorf("port %d, dir %q, settings %+v", c.TLSPort, c.TLSCertDir, c.TLS)
	}
	d, err := Decode(getter(nil))
	if err != nil {
		t.Fatal(err)
	}
	if d.TLSPort != 8112 || d.TLSCertDir != "/var/lib/knative/certs" || d.TLS.MinVersion != tls.VersionTLS13 {
		t.Errorf("defaults differ from queue-proxy's: port %d, dir %q, settings %+v", d.TLSPort, d.TLSCertDir, d.TLS)
	}
	if _, err := Decode(getter(map[string]string{EnvQueueServingTLSPort: "https"})); err == nil ||
		!strings.Contains(err.Error(), `QUEUE_SERVING_TLS_PORT: "https" is not a port number`) {
		t.Errorf("a TLS port that is no number: %v", err)
	}
}

func TestTLSServerConfigCarriesTheSettings(t *testing.T) {
	s := TLSSettings{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}, CurvePreferences: []tls.CurveID{tls.X25519}}
	cfg := s.ServerConfig()
	if cfg.MinVersion != s.MinVersion || cfg.MaxVersion != s.MaxVersion || !reflect.DeepEqual(cfg.CipherSuites, s.CipherSuites) ||
		!reflect.DeepEqual(cfg.CurvePreferences, s.CurvePreferences) {
		t.Errorf("config %+v from %+v", cfg, s)
	}
	cfg.CipherSuites[0] = 0
	if s.CipherSuites[0] == 0 {
		t.Error("the config shares the settings' slices")
	}
}

// FuzzParseTLSSettings: the parser never panics; what it accepts is
// written back by Env to values it reads as the same settings; what it
// rejects, every line of the error names one of the four variables.
func FuzzParseTLSSettings(f *testing.F) {
	f.Add("", "", "", "")
	f.Add("1.2", "1.3", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384", "X25519,P-256")
	f.Add("1.3", "1.2", "NOPE,,", "secp256r1")
	f.Add("1.2", "1.2", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "")
	f.Add("1.2", "", ",,, ,", "CurveP521,X25519MLKEM768")
	f.Fuzz(func(t *testing.T, minV, maxV, suites, curves string) {
		s, err := ParseTLSSettings(minV, maxV, suites, curves)
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, EnvTLSMinVersion+": ") && !strings.HasPrefix(line, EnvTLSMaxVersion+": ") &&
					!strings.HasPrefix(line, EnvTLSCipherSuites+": ") && !strings.HasPrefix(line, EnvTLSCurvePreferences+": ") {
					t.Fatalf("error line %q names no variable", line)
				}
			}
			if !reflect.DeepEqual(s, DefaultTLSSettings()) {
				t.Fatalf("rejected, but returned %+v", s)
			}
			return
		}
		if s.MinVersion != tls.VersionTLS12 && s.MinVersion != tls.VersionTLS13 || s.MaxVersion != 0 && s.MaxVersion < s.MinVersion {
			t.Fatalf("accepted versions %x..%x", s.MinVersion, s.MaxVersion)
		}
		again, err := ParseTLSSettings(s.Env())
		if err != nil {
			t.Fatalf("re-reading %+v: %v", s, err)
		}
		if !reflect.DeepEqual(s, again) {
			t.Fatalf("Env/Parse changed the settings:\n%+v\n%+v", s, again)
		}
	})
}
