package knative

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSourcesAreServingsVersionAndTheModulesItsGoModRequires(t *testing.T) {
	s := testSources(t)
	if filepath.Base(s.Serving) != "serving@"+ServingVersion {
		t.Errorf("serving from %s, want serving@%s", s.Serving, ServingVersion)
	}
	// The versions serving v0.50.0's go.mod requires (its
	// knative.dev/networking and knative.dev/caching pseudo-versions).
	for dir, want := range map[string]string{
		s.Networking: "networking@v0.0.0-20260727162500-c7a7b772cac9",
		s.Caching:    "caching@v0.0.0-20260727161800-0edbf88bc267",
	} {
		if filepath.Base(dir) != want {
			t.Errorf("%s, want %s", dir, want)
		}
	}
}

func TestRequiresReadsTheVersionsAGoModRequires(t *testing.T) {
	for _, tc := range []struct {
		name  string
		gomod string
		want  []string
		err   string
	}{
		{"required", "module m\nrequire (\n\tknative.dev/networking v0.1.0\n\tknative.dev/caching v0.2.0 // indirect\n)\n",
			[]string{"knative.dev/networking@v0.1.0", "knative.dev/caching@v0.2.0"}, ""},
		{"not required", "module m\nrequire knative.dev/networking v0.1.0\n", nil, "does not require knative.dev/caching"},
		// As the go command ignores a dependency's replace directives.
		{"a replace ignored", "module m\nrequire (\n\tknative.dev/networking v0.1.0\n\tknative.dev/caching v0.2.0\n)\nreplace knative.dev/caching => ../caching\n",
			[]string{"knative.dev/networking@v0.1.0", "knative.dev/caching@v0.2.0"}, ""},
		{"not a go.mod", "module m\nrequire (\n", nil, "go.mod"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := requires("go.mod", []byte(tc.gomod), networkingModule, cachingModule)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("requires: %q, %v; want an error saying %q", got, err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("requires: %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestTheClusterDNSAddressIsTheTenthOfTheServiceRange(t *testing.T) {
	for _, tc := range []struct{ cidr, want, err string }{
		{"10.96.0.0/16", "10.96.0.10", ""},
		{"10.96.0.0/12", "10.96.0.10", ""},
		{"10.100.5.0/24", "10.100.5.10", ""},
		{"10.96.1.7/16", "10.96.0.10", ""}, // host bits dropped
		{"10.96.0.0/29", "", "no tenth address"},
		{"10.96.0.0", "", "service CIDR"},
	} {
		got, err := DNSServiceIP(tc.cidr)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, %v; want an error saying %q", tc.cidr, got, err, tc.err)
			}
			continue
		}
		if err != nil || got.String() != tc.want {
			t.Errorf("%s: %v, %v; want %s", tc.cidr, got, err, tc.want)
		}
	}
}
