package server

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestParseServicePort(t *testing.T) {
	for _, tc := range []struct {
		name    string
		flag    string
		want    ServicePort
		wantErr string
	}{
		{name: "a name and a port", flag: "hello=8081", want: ServicePort{Name: "hello", Port: 8081}},
		{name: "a namespace narrows the name", flag: "shop/web=0", want: ServicePort{Namespace: "shop", Name: "web"}},
		{name: "no equals sign", flag: "hello", wantErr: "want [NAMESPACE/]NAME=PORT"},
		{name: "no name", flag: "=8081", wantErr: "want [NAMESPACE/]NAME=PORT"},
		{name: "a port that is no number", flag: "hello=http", wantErr: `port "http"`},
		{name: "a negative port", flag: "hello=-1", wantErr: `port "-1"`},
		{name: "an upper-case name", flag: "Hello=80", wantErr: `name "Hello"`},
		{name: "an invalid namespace", flag: "Shop/web=80", wantErr: `namespace "Shop"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseServicePort(tc.flag)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parse %q: error %v, want one containing %q", tc.flag, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parse %q: %v", tc.flag, err)
			}
			tc.want.Raw = tc.flag
			if got != tc.want {
				t.Errorf("parse %q = %+v, want %+v", tc.flag, got, tc.want)
			}
		})
	}
}

func FuzzParseServicePort(f *testing.F) {
	for _, s := range []string{"hello=8081", "shop/web=0", "a/b/c=1", "x=65536", "=", "/=1", "a=+1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, flag string) {
		p, err := ParseServicePort(flag)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--service-port ") {
				t.Fatalf("parse %q: error %v does not name the flag", flag, err)
			}
			return
		}
		if p.Port < 0 || p.Port > 65535 {
			t.Fatalf("parse %q: port %d out of range", flag, p.Port)
		}
		if len(validation.IsDNS1123Subdomain(p.Name)) > 0 {
			t.Fatalf("parse %q: invalid name %q accepted", flag, p.Name)
		}
		if p.Namespace != "" && len(validation.IsDNS1123Label(p.Namespace)) > 0 {
			t.Fatalf("parse %q: invalid namespace %q accepted", flag, p.Namespace)
		}
	})
}
