package webhook

import (
	"crypto/x509"
	"strings"
	"testing"
	"time"
)

var testPolicy = certPolicy{
	caLifetime:   60 * time.Minute,
	certLifetime: 12 * time.Minute,
	hosts:        []string{"podgate-webhook.podgate-system.svc", "127.0.0.1"},
}

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// at advances s to now and fails the test on error.
func at(t *testing.T, p certPolicy, s pkiState, now time.Time) (pkiState, bool, time.Time) {
	t.Helper()
	next, changed, wake, err := p.advance(s, now)
	if err != nil {
		t.Fatal(err)
	}
	if !wake.After(now) {
		t.Errorf("at %s the next change is planned for %s, not later", now.Sub(t0), wake.Sub(t0))
	}
	// What advance returns must survive the Secret unchanged.
	reread := parseState(next.data())
	if !reread.ca.Cert.Equal(next.ca.Cert) || !reread.serving.Cert.Equal(next.serving.Cert) ||
		!sameCerts(reread.trusted, next.trusted) || (reread.next == nil) != (next.next == nil) {
		t.Errorf("the state does not read back from the Secret's data")
	}
	return next, changed, wake
}

func signedBy(c, ca *x509.Certificate) bool { return c.CheckSignatureFrom(ca) == nil }

func TestAFirstStartMakesACAAndAServingCertificateForEveryHost(t *testing.T) {
	s, changed, wake := at(t, testPolicy, pkiState{}, t0)
	if !changed {
		t.Fatal("nothing made from an empty Secret")
	}
	if !s.ca.Cert.IsCA || !signedBy(s.serving.Cert, s.ca.Cert) {
		t.Error("the serving certificate is not signed by the CA")
	}
	if s.next != nil || len(s.trusted) != 1 || !s.trusted[0].Equal(s.ca.Cert) {
		t.Errorf("the bundle is not just the CA: next %v, %d trusted", s.next != nil, len(s.trusted))
	}
	for _, h := range testPolicy.hosts {
		if !namesHost(s.serving.Cert, h) {
			t.Errorf("the serving certificate does not name %s", h)
		}
	}
	if s.serving.Cert.Subject.CommonName != testPolicy.hosts[0] {
		t.Errorf("common name %q", s.serving.Cert.Subject.CommonName)
	}
	if s.serving.Cert.NotBefore.After(t0) || !s.serving.Cert.NotAfter.Equal(t0.Add(testPolicy.certLifetime)) {
		t.Errorf("serving certificate valid %s to %s", s.serving.Cert.NotBefore, s.serving.Cert.NotAfter)
	}
	if want := rotateAt(s.serving.Cert); !wake.Equal(want) {
		t.Errorf("next change planned at %s, want the serving certificate's rotation at %s", wake.Sub(t0), want.Sub(t0))
	}
	if again, changed, _ := at(t, testPolicy, s, t0.Add(time.Minute)); changed || !again.serving.Cert.Equal(s.serving.Cert) {
		t.Error("a current state changed")
	}
}

// TestTheTimeline walks one CA's life: serving certificates replaced at
// 2/3 of theirs, the successor published at half the CA's life and
// signing from 2/3, the old CA trusted until it expires.
func TestTheTimeline(t *testing.T) {
	s, _, _ := at(t, testPolicy, pkiState{}, t0)
	caA, s1 := s.ca.Cert, s.serving.Cert

	t.Run("the serving certificate stays until 2/3 of its lifetime", func(t *testing.T) {
		before, changed, _ := at(t, testPolicy, s, rotateAt(s1).Add(-time.Second))
		if changed || !before.serving.Cert.Equal(s1) {
			t.Fatal("replaced early")
		}
		after, changed, _ := at(t, testPolicy, s, rotateAt(s1))
		if !changed || after.serving.Cert.Equal(s1) || !signedBy(after.serving.Cert, caA) {
			t.Fatal("not replaced at 2/3 by the same CA")
		}
		if !after.ca.Cert.Equal(caA) || after.next != nil {
			t.Error("the CA changed with the serving certificate")
		}
	})

	// Follow the state as a running webhook would, at every planned change.
	now := t0
	var published, promoted time.Time
	var caB *x509.Certificate
	var afterPromotion pkiState
	for now.Before(t0.Add(90 * time.Minute)) {
		var wake time.Time
		prev := s
		s, _, wake = at(t, testPolicy, s, now)
		if s.next != nil && prev.next == nil && published.IsZero() {
			published, caB = now, s.next.Cert
		}
		if caB != nil && s.ca.Cert.Equal(caB) && promoted.IsZero() {
			promoted, afterPromotion = now, s
		}
		if !signedBy(s.serving.Cert, s.ca.Cert) {
			t.Fatalf("at %s the serving certificate is not signed by the current CA", now.Sub(t0))
		}
		if s.serving.Cert.NotAfter.After(s.ca.Cert.NotAfter) {
			t.Fatalf("at %s the serving certificate outlives its CA", now.Sub(t0))
		}
		if !trusts(s.trusted, s.ca.Cert) {
			t.Fatalf("at %s the bundle lacks the signing CA", now.Sub(t0))
		}
		now = wake
	}
	if published.IsZero() || promoted.IsZero() {
		t.Fatalf("no successor published (%v) or promoted (%v)", published, promoted)
	}
	if want := publishNextAt(caA); !published.Equal(want) {
		t.Errorf("successor published at %s, want half the CA's life, %s", published.Sub(t0), want.Sub(t0))
	}
	if want := rotateAt(caA); !promoted.Equal(want) {
		t.Errorf("successor promoted at %s, want 2/3 of the CA's life, %s", promoted.Sub(t0), want.Sub(t0))
	}
	if lead := promoted.Sub(published); lead < testPolicy.caLifetime/7 {
		t.Errorf("the successor was trusted only %s before it signed", lead)
	}

	t.Run("the old CA stays trusted until it expires", func(t *testing.T) {
		s, _, _ := at(t, testPolicy, afterPromotion, caA.NotAfter.Add(-time.Second))
		if !trusts(s.trusted, caA) {
			t.Error("dropped before it expired")
		}
		s, _, _ = at(t, testPolicy, s, caA.NotAfter)
		if trusts(s.trusted, caA) {
			t.Error("kept after it expired")
		}
	})
}

func TestASuccessorMadeLateIsPublishedBeforeItSigns(t *testing.T) {
	s, _, _ := at(t, testPolicy, pkiState{}, t0)
	caA := s.ca.Cert
	// podgate did not run from the CA's half to after its 2/3.
	late := rotateAt(caA).Add(5 * time.Minute)
	s, changed, wake := at(t, testPolicy, s, late)
	if !changed || s.next == nil {
		t.Fatal("no successor published")
	}
	if !s.ca.Cert.Equal(caA) || !signedBy(s.serving.Cert, caA) {
		t.Fatal("the successor signs as soon as it is made")
	}
	if !trusts(s.trusted, s.next.Cert) {
		t.Fatal("the successor is not in the bundle")
	}
	caB := s.next.Cert
	s, _, _ = at(t, testPolicy, s, wake)
	for !s.ca.Cert.Equal(caB) {
		if wake.After(caA.NotAfter) {
			t.Fatal("not promoted by the time the old CA expired")
		}
		s, _, wake = at(t, testPolicy, s, wake)
	}
}

func TestBrokenOrStaleStateHeals(t *testing.T) {
	good, _, _ := at(t, testPolicy, pkiState{}, t0)
	tests := []struct {
		name string
		data map[string][]byte
		now  time.Time
		want func(t *testing.T, s pkiState)
	}{
		{"garbage everywhere", map[string][]byte{secretCACert: []byte("x"), secretCAKey: []byte("y"), secretTLSCert: []byte("z")}, t0,
			func(t *testing.T, s pkiState) {
				if s.ca == nil || s.serving == nil {
					t.Error("nothing made")
				}
			}},
		{"a serving certificate whose key was swapped", func() map[string][]byte {
			d := good.data()
			d[secretTLSKey] = good.ca.KeyPEM
			return d
		}(), t0.Add(time.Minute),
			func(t *testing.T, s pkiState) {
				if !s.ca.Cert.Equal(good.ca.Cert) || s.serving.Cert.Equal(good.serving.Cert) {
					t.Error("want the same CA and a new serving certificate")
				}
			}},
		{"a serving certificate without a host asked for", good.data(), t0.Add(time.Minute),
			func(t *testing.T, s pkiState) {
				if !namesHost(s.serving.Cert, "webhook.example") {
					t.Error("not reissued for the new host")
				}
			}},
		{"everything expired: a new CA at once", good.data(), t0.Add(3 * time.Hour),
			func(t *testing.T, s pkiState) {
				if s.ca.Cert.Equal(good.ca.Cert) || len(s.trusted) != 1 {
					t.Errorf("want only a new CA; %d trusted", len(s.trusted))
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPolicy
			if strings.Contains(tt.name, "host") {
				p.hosts = append(append([]string{}, p.hosts...), "webhook.example")
			}
			s, changed, _ := at(t, p, parseState(tt.data), tt.now)
			if !changed {
				t.Fatal("nothing changed")
			}
			if !signedBy(s.serving.Cert, s.ca.Cert) {
				t.Error("the serving certificate is not signed by the CA")
			}
			tt.want(t, s)
		})
	}
}

func TestTheBundleIsTheSameBytesForTheSameCAs(t *testing.T) {
	s, _, _ := at(t, testPolicy, pkiState{}, t0)
	s, _, _ = at(t, testPolicy, s, publishNextAt(s.ca.Cert))
	if len(s.trusted) != 2 {
		t.Fatalf("%d trusted, want 2", len(s.trusted))
	}
	swapped := s
	swapped.trusted = []*x509.Certificate{s.trusted[1], s.trusted[0]}
	if got := trustedCAs(swapped, publishNextAt(s.ca.Cert)); !sameCerts(got, s.trusted) {
		t.Error("the order of the bundle depends on the order read")
	}
}
