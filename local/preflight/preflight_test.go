package preflight

import (
	"net/netip"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podgate/podgate/admission/workload"
)

func load(t *testing.T, yaml string) []*workload.Workload {
	t.Helper()
	m, err := workload.Load(strings.NewReader(yaml), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return m.Workloads
}

func pod(name, namespace string) string {
	return `apiVersion: v1
kind: Pod
metadata: {name: ` + name + `, namespace: ` + namespace + `}
spec:
  containers: [{name: app, image: ghcr.io/podgate/testapp}]
`
}

func deployment(name string, replicas int) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata: {name: ` + name + `}
spec:
  replicas: ` + string(rune('0'+replicas)) + `
  selector: {matchLabels: {app: ` + name + `}}
  template:
    metadata: {labels: {app: ` + name + `}}
    spec:
      containers: [{name: app, image: ghcr.io/podgate/testapp}]
`
}

func knativeService(name string) string {
	return `apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: ` + name + `}
spec:
  template:
    spec:
      containers: [{image: ghcr.io/podgate/testapp}]
`
}

func docs(ds ...string) string { return strings.Join(ds, "---\n") }

func TestCheck(t *testing.T) {
	t.Parallel()
	room := func(n int) func() (int, netip.Prefix) {
		return func() (int, netip.Prefix) { return n, netip.MustParsePrefix("127.0.70.0/24") }
	}
	one := int32(1)
	for _, tc := range []struct {
		name      string
		manifests string
		opts      Options
		want      []string // every one in the error; none: no error
	}{
		{"workloads of different names that fit pass", docs(pod("a", "default"), deployment("b", 2)),
			Options{Capacity: room(3)}, nil},
		{"two Pods of one name in one namespace collide", docs(pod("web", "default"), pod("web", "default")),
			Options{Capacity: room(10)},
			[]string{`m.yaml: doc 2: Pod/web: metadata.name: Duplicate value: "web": m.yaml: doc 1 defines Pod/web in namespace default too: each workload runs once, rename one`}},
		{"Pods of one name in two namespaces do not collide", docs(pod("web", "default"), pod("web", "other")),
			Options{Capacity: room(10)}, nil},
		{"a Pod and a Deployment of one name would share an EndpointSlice", docs(pod("web", "default"), deployment("web", 1)),
			Options{Capacity: room(10)},
			[]string{`m.yaml: doc 2: Deployment/web: metadata.name: Duplicate value: "web": m.yaml: doc 1: Pod/web makes EndpointSlice default/web too: each workload runs once, rename one`}},
		{"a Knative Service's EndpointSlice is its revision's", docs(knativeService("hello"), deployment("hello-00001", 1)),
			Options{Capacity: room(10)},
			[]string{"makes EndpointSlice default/hello-00001 too"}},
		{"more pods than the range has room for", docs(pod("a", "default"), deployment("b", 3)),
			Options{Capacity: room(3)},
			[]string{"--pod-cidr 127.0.70.0/24: room for 3 pod(s), the workloads start 4: give it a larger range"}},
		{"a colliding workload's pods are not counted", docs(deployment("b", 3), deployment("b", 3)),
			Options{Capacity: room(3)},
			[]string{"Deployment/b: metadata.name: Duplicate value"}},
		{"Options.Replicas replaces every controller's replicas", docs(pod("a", "default"), deployment("b", 3)),
			Options{Capacity: room(2), Replicas: &one}, nil},
		{"the containers' problems are named by manifest, workload and field path", pod("web", "default"),
			Options{Capacity: room(1), Containers: func(w *workload.Workload) field.ErrorList {
				return field.ErrorList{field.Required(w.SpecPath().Child("containers").Index(0).Child("command"), "no local program")}
			}},
			[]string{"cannot run locally:\n  m.yaml: doc 1: Pod/web: spec.containers[0].command: Required value: no local program"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := Check(load(t, tc.manifests), tc.opts)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Check = nil, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Check =\n%v\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

func TestAutoscalingIsNamedAsKnativesOnly(t *testing.T) {
	const ksvc = `apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: web}
spec:
  template:
    metadata:
      annotations:
        autoscaling.knative.dev/min-scale: "2"
        autoscaling.knative.dev/max-scale: "5"
        autoscaling.knative.dev/target: "10"
    spec:
      containerConcurrency: 1
      containers: [{image: ghcr.io/podgate/testapp}]
`
	three := int32(3)
	for _, c := range []struct {
		name     string
		manifest string
		replicas *int32
		want     []string
	}{
		{"each autoscaling annotation by its field path, and containerConcurrency's queue", ksvc, nil, []string{
			"spec.template.metadata.annotations[autoscaling.knative.dev/max-scale]: ignored: 'podgate run' does not autoscale",
			"spec.template.metadata.annotations[autoscaling.knative.dev/min-scale]: read once for how many pods to start (2)",
			"spec.template.metadata.annotations[autoscaling.knative.dev/target]: ignored",
			"spec.template.spec.containerConcurrency: the gate lets 1 request(s) at a time into each pod and queues the rest; 'podgate run' adds no pod for them (it runs 2)",
		}},
		{"--replicas overrides the scale annotations", ksvc, &three, []string{
			"spec.template.metadata.annotations[autoscaling.knative.dev/max-scale]: ignored",
			"spec.template.metadata.annotations[autoscaling.knative.dev/min-scale]: overridden by --replicas 3",
			"spec.template.metadata.annotations[autoscaling.knative.dev/target]: ignored",
			"(it runs 3)",
		}},
		{"a Deployment has nothing Knative would scale", deployment("web", 2), nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Autoscaling(load(t, c.manifest)[0], c.replicas)
			if len(got) != len(c.want) {
				t.Fatalf("warnings %q, want %d", got, len(c.want))
			}
			for i, w := range c.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("warning %d = %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}
