package workload

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// load runs Load on an inline manifest and returns the workloads, skipped
// objects and the problem lines.
func load(t *testing.T, manifest string) (*Manifests, []string) {
	t.Helper()
	m, err := Load(strings.NewReader(manifest), "m.yaml")
	var ps Problems
	if err != nil && !errors.As(err, &ps) {
		t.Fatalf("Load: %v", err)
	}
	var lines []string
	for _, p := range ps {
		lines = append(lines, p.Error())
	}
	return m, lines
}

const podDoc = `apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  containers:
    - name: app
      image: img
`

func pod(name string) string { return strings.ReplaceAll(podDoc, "%s", name) }

func TestLoad(t *testing.T) {
	tests := []struct {
		name      string
		manifest  string
		workloads []string // Kind/name@doc
		skipped   []string // Kind/name@doc
		problems  []string
	}{{
		name:      "documents are numbered from 1, empty ones not counted",
		manifest:  "---\n# only a comment\n---\n" + pod("a") + "---\n\n---\n" + pod("b"),
		workloads: []string{"Pod/a@1", "Pod/b@2"},
	}, {
		name:      "a v1 List's items are loaded in turn under the List's document",
		manifest:  pod("first") + "---\napiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSpace(pod("x")), "\n", "\n  ") + "\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n",
		workloads: []string{"Pod/first@1", "Pod/x@2"},
		skipped:   []string{"ConfigMap/c@2"},
	}, {
		name:      "a JSON stream holds one document per value",
		manifest:  `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"a","image":"i"}]}}` + "\n" + `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}`,
		workloads: []string{"Pod/a@1"},
		skipped:   []string{"ConfigMap/b@2"},
	}, {
		name:     "a broken JSON value after a good one is reported as the next document",
		manifest: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}` + "\n" + `{"apiVersion": [}`,
		skipped:  []string{"ConfigMap/b@1"},
		problems: []string{"m.yaml: doc 2: not valid YAML: "},
	}, {
		name:     "other kinds are skipped, not errors",
		manifest: "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {ports: [{port: 80}]}\n",
		skipped:  []string{"Service/web@1"},
	}, {
		name:     "an old version of a kind podgate runs is an error",
		manifest: "apiVersion: serving.knative.dev/v1alpha1\nkind: Service\nmetadata: {name: old}\n",
		problems: []string{`m.yaml: doc 1: Service/old: apiVersion "serving.knative.dev/v1alpha1" is not supported for kind Service`},
	}, {
		name:     "a List in a List is an error",
		manifest: "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: List, items: []}\n",
		problems: []string{"m.yaml: doc 1: List/<no name>: a List inside a List is not supported"},
	}, {
		name:      "unknown fields are reported with their path and the rest still loads",
		manifest:  strings.Replace(pod("a"), "image: img", "image: img\n      colour: blue", 1),
		workloads: []string{"Pod/a@1"},
		problems:  []string{`m.yaml: doc 1: Pod/a: spec.containers[0].colour: Forbidden: unknown field`},
	}, {
		name:      "field names are case-sensitive",
		manifest:  strings.Replace(pod("a"), "image: img", "Image: img", 1),
		workloads: []string{"Pod/a@1"},
		problems:  []string{`m.yaml: doc 1: Pod/a: spec.containers[0].Image: Forbidden: unknown field`},
	}, {
		name:     "a type error names the value's path, list indices included",
		manifest: strings.Replace(pod("a"), "image: img", "image: img\n    - name: b\n      image: img\n      ports: [{containerPort: 80}, {containerPort: true}]", 1),
		problems: []string{`m.yaml: doc 1: Pod/a: spec.containers[1].ports[1].containerPort: Invalid value: true: must be a number, not true or false`},
	}, {
		name:     "a type error in a Knative template, through the embedded PodSpec",
		manifest: "apiVersion: serving.knative.dev/v1\nkind: Service\nmetadata: {name: s}\nspec:\n  template:\n    spec:\n      containers:\n      - image: i\n        readinessProbe: {periodSeconds: fast}\n",
		problems: []string{`m.yaml: doc 1: Service/s: spec.template.spec.containers[0].readinessProbe.periodSeconds: Invalid value: "fast": must be a number, not a string`},
	}, {
		name:      "a Knative Service's traffic and status are accepted",
		manifest:  "apiVersion: serving.knative.dev/v1\nkind: Service\nmetadata: {name: s}\nspec:\n  template:\n    spec:\n      containers: [{image: i}]\n  traffic:\n  - latestRevision: true\n    percent: 100\nstatus:\n  url: http://s.default.example.com\n",
		workloads: []string{"Service/s@1"},
	}, {
		name:     "a scalar document is not an object",
		manifest: "just words\n",
		problems: []string{"m.yaml: doc 1: not a Kubernetes object: the document is a string, not a mapping"},
	}, {
		name:     "kind must be a string",
		manifest: "apiVersion: v1\nkind: [Pod]\n",
		problems: []string{"m.yaml: doc 1: not a Kubernetes object: kind must be a string, not a list"},
	}, {
		name:     "field names of the header are case-sensitive too",
		manifest: "ApiVersion: v1\nkind: Pod\nmetadata: {name: a}\n",
		problems: []string{"m.yaml: doc 1: Pod/a: apiVersion not set"},
	}, {
		name:     "apiVersion and kind are required",
		manifest: "kind: Pod\nmetadata: {name: a}\n",
		problems: []string{"m.yaml: doc 1: Pod/a: apiVersion not set"},
	}, {
		name:      "a key given twice is reported with its line, and the document still loads",
		manifest:  strings.Replace(pod("a"), "  name: a\n", "  name: a\n  name: b\n", 1),
		workloads: []string{"Pod/b@1"},
		problems:  []string{`m.yaml: doc 1: Pod/b: duplicate key: line 5 of the document: key "name" already set in map`},
	}, {
		name:     "an empty file holds nothing",
		manifest: "",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, problems := load(t, tt.manifest)
			var ws, ss []string
			for _, w := range m.Workloads {
				ws = append(ws, w.ID()+"@"+strconv.Itoa(w.Source.Doc))
			}
			for _, s := range m.Skipped {
				ss = append(ss, s.Kind+"/"+s.Name+"@"+strconv.Itoa(s.Source.Doc))
			}
			assertStrings(t, "workloads", ws, tt.workloads, false)
			assertStrings(t, "skipped", ss, tt.skipped, false)
			assertStrings(t, "problems", problems, tt.problems, true)
		})
	}
}

func TestInOrderKeepsDocumentOrderAcrossFiles(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.yaml")
	b := filepath.Join(dir, "b.yaml")
	write(t, a, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c1}\n---\n"+pod("p1"))
	write(t, b, pod("p2")+"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c2}\n")
	m, err := LoadFiles(a, b)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range m.InOrder() {
		switch v := it.(type) {
		case *Workload:
			got = append(got, v.Name)
		case Skipped:
			got = append(got, v.Name)
		}
	}
	assertStrings(t, "order", got, []string{"c1", "p1", "p2", "c2"}, false)
}

func TestLoadFilesReportsUnreadableFile(t *testing.T) {
	_, err := LoadFiles(filepath.Join(t.TempDir(), "missing.yaml"))
	var ps Problems
	if err == nil || errors.As(err, &ps) {
		t.Fatalf("want a plain read error, got %v", err)
	}
	if !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("error %q does not name the file", err)
	}
}

func TestLoadRejectsHugeInput(t *testing.T) {
	big := strings.NewReader(strings.Repeat("#", maxManifestBytes+1))
	if _, err := Load(big, "big.yaml"); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("want a size error, got %v", err)
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// assertStrings compares lists; with prefix, want[i] need only start got[i].
func assertStrings(t *testing.T, what string, got, want []string, prefix bool) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s = %q, want %q", what, got, want)
		return
	}
	for i := range want {
		if got[i] != want[i] && !(prefix && strings.HasPrefix(got[i], want[i])) {
			t.Errorf("%s[%d] = %q, want %q", what, i, got[i], want[i])
		}
	}
}
