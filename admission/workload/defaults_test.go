package workload

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// one loads a manifest holding exactly one workload, without problems.
func one(t *testing.T, manifest string) *Workload {
	t.Helper()
	m, problems := load(t, manifest)
	if len(problems) > 0 {
		t.Fatalf("load problems: %v", problems)
	}
	if len(m.Workloads) != 1 {
		t.Fatalf("%d workloads, want 1", len(m.Workloads))
	}
	return m.Workloads[0]
}

func ksvc(containers string, extra ...string) string {
	spec := ""
	meta := ""
	if len(extra) > 0 {
		spec = extra[0]
	}
	if len(extra) > 1 {
		meta = extra[1]
	}
	return "apiVersion: serving.knative.dev/v1\nkind: Service\nmetadata: {name: svc}\nspec:\n  template:\n" + meta + "    spec:\n" + spec + "      containers:\n" + containers
}

func TestKubernetesDefaults(t *testing.T) {
	w := one(t, `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: app
    image: img
    ports: [{containerPort: 8080}]
    readinessProbe: {httpGet: {port: 8080}}
    livenessProbe: {tcpSocket: {port: 8080}, periodSeconds: 0}
`)
	spec := w.PodSpec()
	if spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("restartPolicy %q, want Always", spec.RestartPolicy)
	}
	if g := spec.TerminationGracePeriodSeconds; g == nil || *g != 30 {
		t.Errorf("terminationGracePeriodSeconds %v, want 30", g)
	}
	if w.Namespace != "default" || w.Replicas != 1 {
		t.Errorf("namespace %q replicas %d, want default and 1", w.Namespace, w.Replicas)
	}
	c := spec.Containers[0]
	if c.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("port protocol %q, want TCP", c.Ports[0].Protocol)
	}
	r := c.ReadinessProbe
	if r.PeriodSeconds != 10 || r.TimeoutSeconds != 1 || r.SuccessThreshold != 1 || r.FailureThreshold != 3 {
		t.Errorf("readiness timing %d/%d/%d/%d, want 10/1/1/3", r.PeriodSeconds, r.TimeoutSeconds, r.SuccessThreshold, r.FailureThreshold)
	}
	if r.HTTPGet.Path != "/" || r.HTTPGet.Scheme != corev1.URISchemeHTTP {
		t.Errorf("httpGet path %q scheme %q, want / and HTTP", r.HTTPGet.Path, r.HTTPGet.Scheme)
	}
	if c.LivenessProbe.PeriodSeconds != 10 {
		t.Errorf("liveness period %d: a Pod has no aggressive mode, 0 becomes 10", c.LivenessProbe.PeriodSeconds)
	}
}

func TestDeploymentReplicas(t *testing.T) {
	deployment := func(replicas string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n" + replicas +
			"  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec: {containers: [{name: c, image: i}]}\n"
	}
	if w := one(t, deployment("")); w.Replicas != 1 {
		t.Errorf("replicas %d, want the default 1", w.Replicas)
	}
	if w := one(t, deployment("  replicas: 0\n")); w.Replicas != 0 {
		t.Errorf("replicas %d, want the 0 written", w.Replicas)
	}
}

func TestServingContainer(t *testing.T) {
	tests := []struct {
		name       string
		manifest   string
		container  string
		port       int32
		undeclared bool
	}{{
		name:      "pod: first container with a TCP port",
		manifest:  "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - {name: a, image: i, ports: [{containerPort: 53, protocol: UDP}]}\n  - {name: b, image: i, ports: [{containerPort: 9000}, {containerPort: 9001}]}\n",
		container: "b", port: 9000,
	}, {
		name:      "pod without ports: first container on 8080",
		manifest:  "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - {name: a, image: i}\n  - {name: b, image: i}\n",
		container: "a", port: 8080, undeclared: true,
	}, {
		name:      "knative: the container with the port, wherever it is",
		manifest:  ksvc("      - {name: side, image: i}\n      - {name: main, image: i, ports: [{containerPort: 3000}]}\n"),
		container: "main", port: 3000,
	}, {
		name:      "knative: a port without a number is 8080",
		manifest:  ksvc("      - {image: i, ports: [{name: h2c}]}\n"),
		container: "user-container", port: 8080, undeclared: true,
	}, {
		name:      "knative without ports: the only container on 8080",
		manifest:  ksvc("      - {image: i}\n"),
		container: "user-container", port: 8080, undeclared: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := one(t, tt.manifest)
			if w.ServingContainer != tt.container || w.ServingPort != tt.port {
				t.Errorf("serving %s:%d, want %s:%d", w.ServingContainer, w.ServingPort, tt.container, tt.port)
			}
			if w.ServingPortUndeclared != tt.undeclared {
				t.Errorf("serving port undeclared %v, want %v", w.ServingPortUndeclared, tt.undeclared)
			}
		})
	}
}

func TestKnativeDefaults(t *testing.T) {
	t.Run("revision settings and identity", func(t *testing.T) {
		w := one(t, ksvc("      - image: i\n"))
		k := w.Knative
		if k.TimeoutSeconds != 300 || k.ContainerConcurrency != 0 || k.RevisionName != "svc-00001" {
			t.Errorf("timeout %d concurrency %d revision %q, want 300, 0, svc-00001", k.TimeoutSeconds, k.ContainerConcurrency, k.RevisionName)
		}
		if g := w.PodSpec().TerminationGracePeriodSeconds; g == nil || *g != 300 {
			t.Errorf("grace period %v, want the revision timeout 300", g)
		}
		labels := w.PodLabels()
		if labels[LabelKnativeService] != "svc" || labels[LabelKnativeConfiguration] != "svc" || labels[LabelKnativeRevision] != "svc-00001" {
			t.Errorf("pod labels %v lack Knative's", labels)
		}
	})
	t.Run("container names", func(t *testing.T) {
		w := one(t, ksvc("      - image: i\n        ports: [{containerPort: 8080}]\n      - {image: i}\n      - {name: user-container-1, image: i}\n",
			"      initContainers: [{image: i}]\n"))
		var names []string
		for _, c := range w.PodSpec().Containers {
			names = append(names, c.Name)
		}
		assertStrings(t, "containers", names, []string{"user-container-0", "user-container-2", "user-container-1"}, false)
		if n := w.PodSpec().InitContainers[0].Name; n != "init-container" {
			t.Errorf("init container named %q, want init-container", n)
		}
		if w := one(t, ksvc("      - image: i\n")); w.PodSpec().Containers[0].Name != "user-container" {
			t.Errorf("single container named %q, want user-container", w.PodSpec().Containers[0].Name)
		}
	})
	t.Run("serving container gets an aggressive TCP readiness probe", func(t *testing.T) {
		p := one(t, ksvc("      - image: i\n")).PodSpec().Containers[0].ReadinessProbe
		if p == nil || p.TCPSocket == nil || p.TCPSocket.Port != intstr.FromInt32(8080) {
			t.Fatalf("readiness %+v, want tcpSocket on 8080", p)
		}
		if p.PeriodSeconds != 0 || p.TimeoutSeconds != 0 || p.FailureThreshold != 0 || p.SuccessThreshold != 1 {
			t.Errorf("timing %d/%d/%d/%d, want aggressive 0/0/1/0", p.PeriodSeconds, p.TimeoutSeconds, p.SuccessThreshold, p.FailureThreshold)
		}
	})
	t.Run("periodSeconds 0 survives defaulting, httpGet defaults still apply", func(t *testing.T) {
		p := one(t, ksvc("      - image: i\n        readinessProbe: {httpGet: {}, periodSeconds: 0}\n")).PodSpec().Containers[0].ReadinessProbe
		if p.PeriodSeconds != 0 || p.HTTPGet.Path != "/" || p.HTTPGet.Scheme != corev1.URISchemeHTTP || p.HTTPGet.Port != intstr.FromInt32(8080) {
			t.Errorf("readiness %+v", p)
		}
	})
	t.Run("every container's readiness gets Knative's thresholds", func(t *testing.T) {
		w := one(t, ksvc("      - {image: i, ports: [{containerPort: 8080}]}\n      - image: i\n        readinessProbe: {tcpSocket: {port: 9}, periodSeconds: 4}\n"))
		p := w.PodSpec().Containers[1].ReadinessProbe
		if p.SuccessThreshold != 1 || p.FailureThreshold != 3 || p.TimeoutSeconds != 1 || p.PeriodSeconds != 4 {
			t.Errorf("sidecar readiness %d/%d/%d/%d, want 4/1/1/3", p.PeriodSeconds, p.TimeoutSeconds, p.SuccessThreshold, p.FailureThreshold)
		}
	})
	t.Run("serving container's probes without port get the serving port, startup too", func(t *testing.T) {
		c := one(t, ksvc("      - image: i\n        ports: [{containerPort: 3000}]\n        livenessProbe: {httpGet: {path: /l}}\n        startupProbe: {tcpSocket: {}}\n        readinessProbe: {grpc: {}}\n")).PodSpec().Containers[0]
		if c.LivenessProbe.HTTPGet.Port != intstr.FromInt32(3000) || c.StartupProbe.TCPSocket.Port != intstr.FromInt32(3000) || c.ReadinessProbe.GRPC.Port != 3000 {
			t.Errorf("ports not filled: liveness %v startup %v readiness %v", c.LivenessProbe.HTTPGet.Port, c.StartupProbe.TCPSocket.Port, c.ReadinessProbe.GRPC.Port)
		}
	})
	t.Run("sidecar probe ports are not filled", func(t *testing.T) {
		w := one(t, ksvc("      - {image: i, ports: [{containerPort: 8080}]}\n      - image: i\n        livenessProbe: {tcpSocket: {}}\n"))
		if p := w.PodSpec().Containers[1].LivenessProbe.TCPSocket.Port; p != intstr.FromInt32(0) {
			t.Errorf("sidecar liveness port %v, want it left at 0 for validation to report", p)
		}
	})
	t.Run("replicas from scale annotations", func(t *testing.T) {
		meta := "    metadata:\n      annotations: {autoscaling.knative.dev/initial-scale: \"2\", autoscaling.knative.dev/minScale: \"3\"}\n"
		if w := one(t, ksvc("      - image: i\n", "", meta)); w.Replicas != 3 {
			t.Errorf("replicas %d, want min-scale 3 over initial-scale 2", w.Replicas)
		}
		if w := one(t, ksvc("      - image: i\n")); w.Replicas != 1 {
			t.Errorf("replicas %d, want 1", w.Replicas)
		}
	})
	t.Run("a template name is the revision name", func(t *testing.T) {
		w := one(t, ksvc("      - image: i\n", "", "    metadata: {name: svc-blue}\n"))
		if w.Knative.RevisionName != "svc-blue" {
			t.Errorf("revision %q, want svc-blue", w.Knative.RevisionName)
		}
	})
}
