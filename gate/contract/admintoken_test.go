package contract

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestTheAdminTokenIsAHeaderValueOrNamedAsWrong(t *testing.T) {
	for _, tc := range []struct {
		name, value, want, wantErr string
	}{
		{"unset: none", "", "", ""},
		{"a fresh token", "0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef", ""},
		{"a space is not a header token", "a b", "", EnvAdminToken + ": is not a header value"},
		{"a newline would split the header", "a\nb", "", EnvAdminToken + ": is not a header value"},
		{"too long", strings.Repeat("x", 257), "", EnvAdminToken + ": is not a header value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Decode(func(k string) string {
				if k == EnvAdminToken {
					return tc.value
				}
				return ""
			})
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
			if cfg.AdminToken != tc.want {
				t.Errorf("AdminToken %q, want %q", cfg.AdminToken, tc.want)
			}
		})
	}
}

func TestAFreshAdminTokenEncodesAndIsReadBackFromTheGateContainer(t *testing.T) {
	a, b := NewAdminToken(), NewAdminToken()
	if len(a) != 32 || a == b {
		t.Fatalf("tokens %q %q: want 32 hex characters, fresh each time", a, b)
	}
	cfg := Defaults()
	cfg.AdminToken = a
	gate := &corev1.Container{Name: GateContainerName, Env: cfg.Encode()}
	if got := AdminTokenOf(gate); got != a {
		t.Errorf("AdminTokenOf = %q, want %q", got, a)
	}
	if AdminTokenOf(nil) != "" {
		t.Error("AdminTokenOf(nil) is not empty")
	}
}
