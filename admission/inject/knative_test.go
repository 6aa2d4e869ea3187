package inject

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/gate/contract"
)

// knativePod reads a revision pod as Knative Serving v0.50.0 created it
// (testdata/knative, captured from `podgate cluster up --knative`).
func knativePod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "knative", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(data, &pod); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return &pod
}

func envOf(t *testing.T, c *corev1.Container) map[string]string {
	t.Helper()
	return resolveEnv(t, c.Env, map[string]string{
		"metadata.name": "p", "metadata.namespace": "shop", "status.podIP": "10.244.0.9", "status.hostIP": "10.0.0.9",
	})
}

func TestAdoptKnativeQueue(t *testing.T) {
	const handoff = "http://activator-service.knative-serving.svc.cluster.local:80"
	for _, tc := range []struct {
		name, fixture string
		// want: the PODGATE_ variables the queue container gets.
		containers, readiness, delegated string
	}{
		{
			name:       "two HTTP readiness probes are named serving container first, then the sidecar",
			fixture:    "two-http",
			containers: "first-container,second-container",
			readiness:  "first-container,second-container",
		},
		{
			name:       "a sidecar's exec readiness probe stays on it and is delegated to the pod's status",
			fixture:    "sidecar-exec",
			containers: "app,sidecar",
			readiness:  "app",
			delegated:  "sidecar",
		},
		{
			name:       "a sidecar without a readiness probe leaves which sidecar owns a probe unknown: probes go by position",
			fixture:    "mixed",
			containers: "app,logs,side",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := knativePod(t, tc.fixture)
			if !IsKnativeGate(pod, "ghcr.io/podgate/podgate-gate@sha256:"+strings.Repeat("0", 64)) {
				t.Fatal("IsKnativeGate: false for a revision pod whose queue container runs the gate's image (another digest)")
			}
			adopted, err := AdoptKnativeQueue(pod, KnativeOptions{HandoffURL: handoff})
			if err != nil {
				t.Fatal(err)
			}
			q := queueContainer(&adopted.Spec)
			env := envOf(t, q)
			for name, want := range map[string]string{
				// The node status service on the node's address:
				// PODGATE_HOST_IP comes before it, or the kubelet
				// would not expand it.
				contract.EnvStatusSource:        "http://10.0.0.9:9026",
				contract.EnvContainers:          tc.containers,
				contract.EnvReadinessContainers: tc.readiness,
				contract.EnvDelegatedReadiness:  tc.delegated,
				contract.EnvHandoffURL:          handoff,
			} {
				if env[name] != want {
					t.Errorf("%s = %q, want %q", name, env[name], want)
				}
			}
			// Knative's environment is kept, every variable of it.
			for _, e := range queueContainer(&pod.Spec).Env {
				if !slices.ContainsFunc(q.Env, func(a corev1.EnvVar) bool { return a.Name == e.Name && a.Value == e.Value }) {
					t.Errorf("Knative's %s changed or gone", e.Name)
				}
			}
			p := q.ReadinessProbe
			if p.PeriodSeconds != 1 || p.FailureThreshold != 1 || p.SuccessThreshold != 1 || p.TimeoutSeconds != 1 {
				t.Errorf("queue readiness timing %d s × %d (success %d, timeout %d), want 1 s × 1", p.PeriodSeconds, p.FailureThreshold, p.SuccessThreshold, p.TimeoutSeconds)
			}
			if p.HTTPGet == nil || p.HTTPGet.Port.IntValue() != contract.GatePort || len(p.HTTPGet.HTTPHeaders) != 1 {
				t.Errorf("queue readiness handler changed: %+v", p.ProbeHandler)
			}
			if !slices.Contains(adopted.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: contract.ContainersReadyCondition}) {
				t.Errorf("no readiness gate on %s: %v", contract.ContainersReadyCondition, adopted.Spec.ReadinessGates)
			}
			if g := workload.FindGate(&adopted.Spec); !g.Found() || !g.IsContainer(slices.IndexFunc(adopted.Spec.Containers, func(c corev1.Container) bool { return c.Name == contract.KnativeQueueContainerName })) {
				t.Error("FindGate does not find the adopted queue container")
			}
			// Nothing else of the pod changes: the other containers
			// (their probes, Knative's preStop hooks) stay as Knative
			// wrote them.
			for i, c := range pod.Spec.Containers {
				if c.Name == contract.KnativeQueueContainerName {
					continue
				}
				if got := adopted.Spec.Containers[i]; !equality.Semantic.DeepEqual(got, c) {
					t.Errorf("container %s changed:\n%v\nwant\n%v", c.Name, got.String(), c.String())
				}
			}
			// The gate reads what adoption wrote.
			cfg, err := contract.Decode(func(name string) string { return env[name] })
			if err != nil {
				t.Fatalf("the adopted queue container's environment does not decode: %v", err)
			}
			if got := strings.Join(cfg.Containers, ","); got != tc.containers {
				t.Errorf("decoded containers %q, want %q", got, tc.containers)
			}
			again, err := AdoptKnativeQueue(adopted, KnativeOptions{HandoffURL: "http://elsewhere"})
			if err != nil || !equality.Semantic.DeepEqual(again, adopted) {
				t.Errorf("adopting an adopted pod changed it (err %v)", err)
			}
		})
	}
}

func TestIsKnativeGate(t *testing.T) {
	const gate = "ghcr.io/podgate/podgate-gate@sha256:0d7cdcbb92c3504c4a8a100187d7a4e0b09cd05e392c169256e14821eb5eec4c"
	withQueue := func(image string, labels map[string]string) *corev1.Pod {
		p := knativePod(t, "two-http")
		p.Labels = labels
		queueContainer(&p.Spec).Image = image
		return p
	}
	rev := map[string]string{workload.LabelKnativeRevision: "two-http-00001"}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"the gate by the same digest", withQueue(gate, rev), true},
		{"the gate by a tag", withQueue("ghcr.io/podgate/podgate-gate:v1", rev), true},
		{"Knative's own queue-proxy is left alone", withQueue("podgate.local/knative/queue@sha256:"+strings.Repeat("a", 64), rev), false},
		{"a pod of no revision is not Knative's", withQueue(gate, nil), false},
		{"a revision pod without a queue container", func() *corev1.Pod {
			p := withQueue(gate, rev)
			p.Spec.Containers = p.Spec.Containers[:1]
			return p
		}(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsKnativeGate(tc.pod, gate); got != tc.want {
				t.Errorf("IsKnativeGate = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAdoptKnativeQueueNeedsTheServingContainer(t *testing.T) {
	pod := knativePod(t, "two-http")
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name != contract.KnativeQueueContainerName {
			pod.Spec.Containers[i].Ports = nil
		}
	}
	_, err := AdoptKnativeQueue(pod, KnativeOptions{})
	if err == nil || !strings.Contains(err.Error(), contract.EnvUserPort) {
		t.Fatalf("err = %v, want one naming %s", err, contract.EnvUserPort)
	}
}

func TestAdoptKnativeQueueKeepsTheDrainInsideTheGracePeriod(t *testing.T) {
	for _, tc := range []struct {
		name       string
		grace      int64
		annotation string // podgate.dev/drain-quiet-period, "" none
		want       string
	}{
		{"Knative's default timeoutSeconds (300 s) keeps queue-proxy's 30 s", 300, "", ""},
		{"a 20 s timeoutSeconds drains for half of it", 20, "", "10s"},
		{"the revision's annotation sets the quiet period", 300, "5s", "5s"},
		{"an annotation that does not fit the grace period is ignored (validation names it)", 20, "25s", "10s"},
		{"an annotation that is no duration is ignored", 300, "30", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := knativePod(t, "two-http")
			pod.Spec.TerminationGracePeriodSeconds = &tc.grace
			if tc.annotation != "" {
				if pod.Annotations == nil {
					pod.Annotations = map[string]string{}
				}
				pod.Annotations[contract.AnnotationDrainQuietPeriod] = tc.annotation
			}
			adopted, err := AdoptKnativeQueue(pod, KnativeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := envOf(t, queueContainer(&adopted.Spec))[contract.EnvDrainQuietPeriod]; got != tc.want {
				t.Errorf("%s = %q, want %q", contract.EnvDrainQuietPeriod, got, tc.want)
			}
		})
	}
}
