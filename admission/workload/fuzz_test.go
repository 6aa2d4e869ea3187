package workload_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/podgate/podgate/admission/inject"
	"github.com/podgate/podgate/admission/validation"
	"github.com/podgate/podgate/admission/workload"
)

// FuzzLoad feeds arbitrary bytes through the whole admission path. Load,
// Validate and Inject must never panic; every problem must be located;
// and whatever is valid must inject into a manifest that loads, validates
// and injects to itself again.
func FuzzLoad(f *testing.F) {
	for _, dir := range []string{"../testdata/valid", "../testdata/invalid", "../../examples"} {
		for _, pat := range []string{"*.yaml", "*.json"} {
			files, _ := filepath.Glob(filepath.Join(dir, pat))
			for _, file := range files {
				if b, err := os.ReadFile(file); err == nil {
					f.Add(b)
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := workload.Load(bytes.NewReader(data), "f.yaml")
		var problems workload.Problems
		if err != nil && !errors.As(err, &problems) {
			t.Fatalf("Load returned a non-Problems error for in-memory input: %v", err)
		}
		for _, p := range problems {
			if p.File != "f.yaml" || p.Doc < 1 || p.Message == "" {
				t.Fatalf("problem not located: %+v", p)
			}
		}
		for _, w := range m.Workloads {
			errs := validation.Validate(w)
			_ = w.Warnings()
			if _, err := w.YAML(); err != nil {
				t.Fatalf("YAML(%s): %v", w.ID(), err)
			}
			if len(problems) > 0 || len(errs) > 0 {
				continue
			}
			iw, err := inject.Gate(w, inject.Options{})
			if err != nil {
				t.Fatalf("Inject of a valid %s: %v", w.ID(), err)
			}
			out, err := iw.YAML()
			if err != nil {
				t.Fatal(err)
			}
			again, err := workload.Load(bytes.NewReader(out), "injected.yaml")
			if err != nil {
				t.Fatalf("injected %s does not load: %v\n%s", w.ID(), err, out)
			}
			if len(again.Workloads) != 1 {
				t.Fatalf("injected %s reloads as %d workloads", w.ID(), len(again.Workloads))
			}
			rw := again.Workloads[0]
			if errs := validation.Validate(rw); len(errs) > 0 {
				t.Fatalf("injected %s does not validate: %v\n%s", w.ID(), errs, out)
			}
			rw2, err := inject.Gate(rw, inject.Options{})
			if err != nil {
				t.Fatal(err)
			}
			out2, _ := rw2.YAML()
			if !bytes.Equal(out, out2) {
				t.Fatalf("re-injecting %s changed it:\n%s\n---\n%s", w.ID(), out, out2)
			}
		}
	})
}
