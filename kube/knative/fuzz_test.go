package knative

import (
	"os"
	"path/filepath"
	"testing"
)

// crdsOf reads whatever YAML a module ships: it returns an error or the
// counts, never panics, and counts no more objects than documents.
func FuzzCRDsOf(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"))
	f.Add([]byte("# only a comment\n---\nkind: CustomResourceDefinition\nmetadata:\n  name: x.y\n---\n"))
	f.Add([]byte("kind: [\n"))
	f.Add([]byte("---\n---\n\n"))
	if s, err := sources(); err == nil {
		for _, p := range []string{
			filepath.Join(s.Serving, "config/core/300-resources/route.yaml"),
			filepath.Join(s.Serving, "config/core/deployments/activator-hpa.yaml"),
			filepath.Join(s.Networking, "config/config-network.yaml"),
		} {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		crds, others, err := crdsOf(b)
		if err != nil {
			return
		}
		if docs := bytesCount(b, "---") + 1; len(crds)+others > docs {
			t.Errorf("%d CRDs and %d others from at most %d documents", len(crds), others, docs)
		}
	})
}

func bytesCount(b []byte, sep string) int {
	n := 0
	for i := 0; i+len(sep) <= len(b); i++ {
		if string(b[i:i+len(sep)]) == sep {
			n++
		}
	}
	return n
}
