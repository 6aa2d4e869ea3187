package apiserver

import (
	"net/url"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
)

// FuzzParseListQuery: any query string is either refused with a 400 or
// yields selectors that re-parse to themselves and only name selectable
// fields; never a panic.
func FuzzParseListQuery(f *testing.F) {
	for _, s := range []string{
		"", "watch=true&resourceVersion=12", "labelSelector=app%3Dweb,tier!%3Dfront",
		"labelSelector=app+in+(a,b),!x", "fieldSelector=metadata.name%3Dweb,status.phase!%3DRunning",
		"fieldSelector=spec.foo%3D1", "timeoutSeconds=30&watch=1", "labelSelector=%3D%3D", "fieldSelector=a%3D%3Db%5C",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		lq, err := parseListQuery(q, podFields)
		if err != nil {
			if st := statusOf(err); st.Code != 400 {
				t.Fatalf("refusal is %d, want 400: %v", st.Code, err)
			}
			return
		}
		if again, err := labels.Parse(lq.labels.String()); err != nil || again.String() != lq.labels.String() {
			t.Fatalf("label selector %q does not re-parse: %v", lq.labels, err)
		}
		for _, r := range lq.fields.Requirements() {
			if !slices.Contains(podFields, r.Field) {
				t.Fatalf("accepted unselectable field %q", r.Field)
			}
		}
		if lq.timeout < 0 {
			t.Fatalf("negative timeout %v", lq.timeout)
		}
	})
}

// FuzzPodLogOptions: log parameters are refused with a 400 or parsed into
// options within their bounds.
func FuzzPodLogOptions(f *testing.F) {
	for _, s := range []string{"", "container=app&follow=true", "tailLines=10&limitBytes=5&sinceSeconds=3", "tailLines=-1", "previous=yes"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		opts, err := podLogOptions(q)
		if err != nil {
			if st := statusOf(err); st.Code != 400 {
				t.Fatalf("refusal is %d, want 400: %v", st.Code, err)
			}
			return
		}
		if (opts.TailLines != nil && *opts.TailLines < 0) || (opts.LimitBytes != nil && *opts.LimitBytes < 1) || (opts.SinceSeconds != nil && *opts.SinceSeconds < 1) {
			t.Fatalf("out of bounds: %+v", opts)
		}
	})
}
