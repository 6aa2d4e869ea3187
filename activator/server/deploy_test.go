package server

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// kustomizations are the directories under kube/deploy/ with a
// kustomization.yaml: every one is built by the tests.
func kustomizations(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir("../../kube/deploy", func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "kustomization.yaml" {
			dirs = append(dirs, filepath.Dir(path))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// decodeAs converts a built object into a typed one, refusing unknown
// fields.
func decodeAs(t *testing.T, obj map[string]any, into any) {
	t.Helper()
	b, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, into); err != nil {
		t.Fatalf("%s %v: %v", obj["kind"], obj["metadata"], err)
	}
}

// TestKustomizationsBuildAndApply builds every kustomization under
// kube/deploy/ with the kubectl of internal/k8sbin, pins the rights and the
// activator's Deployment in what kube/deploy/base builds, and has the real
// API server check every object (kubectl apply --dry-run=server).
func TestKustomizationsBuildAndApply(t *testing.T) {
	dirs := kustomizations(t)
	for _, want := range []string{"../../kube/deploy/base", "../../kube/deploy/knative"} {
		if !slices.Contains(dirs, want) {
			t.Errorf("no kustomization in %s (found %v)", want, dirs)
		}
	}
	built := map[string][]map[string]any{}
	for _, dir := range dirs {
		objs, err := kustomize(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(objs) == 0 {
			t.Errorf("%s builds to nothing", dir)
		}
		built[dir] = objs
	}

	t.Run("deploy/base grants least privilege", func(t *testing.T) {
		roles := map[string][]rbacv1.PolicyRule{}
		for _, o := range built["../../kube/deploy/base"] {
			if o["kind"] == "ClusterRole" {
				var r rbacv1.ClusterRole
				decodeAs(t, o, &r)
				roles[r.Name] = r.Rules
			}
		}
		want := map[string][]rbacv1.PolicyRule{
			"podgate:activator": {
				{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
				{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch"}},
			},
			"podgate:gate": {
				{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
				{APIGroups: []string{""}, Resources: []string{"pods/status"}, Verbs: []string{"patch"}},
				// No resource: the mark the policy podgate-gate-own-pod finds gates by.
				{APIGroups: []string{"podgate.dev"}, Resources: []string{"gates"}, Verbs: []string{"use"}},
			},
		}
		for name, rules := range want {
			if !reflect.DeepEqual(roles[name], rules) {
				t.Errorf("ClusterRole %s rules %+v, want %+v", name, roles[name], rules)
			}
		}
	})

	t.Run("deploy/base runs podgate activator as its service account, probed on its metrics port", func(t *testing.T) {
		var d *appsv1.Deployment
		var svc *corev1.Service
		for _, o := range built["../../kube/deploy/base"] {
			md, _ := o["metadata"].(map[string]any)
			switch {
			case o["kind"] == "Deployment" && md["name"] == "podgate-activator":
				d = &appsv1.Deployment{}
				decodeAs(t, o, d)
			case o["kind"] == "Service" && md["name"] == "podgate-activator":
				svc = &corev1.Service{}
				decodeAs(t, o, svc)
			}
		}
		if d == nil || svc == nil {
			t.Fatalf("deploy/base has no podgate-activator Deployment (%v) or Service (%v)", d != nil, svc != nil)
		}
		spec := d.Spec.Template.Spec
		c := spec.Containers[0]
		if spec.ServiceAccountName != "podgate-activator" || c.Image != "ghcr.io/podgate/podgate:latest" || len(c.Args) == 0 || c.Args[0] != "activator" {
			t.Errorf("service account %q, image %q, args %q", spec.ServiceAccountName, c.Image, c.Args)
		}
		for _, p := range []struct {
			probe *corev1.Probe
			path  string
		}{{c.ReadinessProbe, PathReadyz}, {c.LivenessProbe, PathHealthz}} {
			if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.StrVal != "http-metrics" {
				t.Errorf("probe %+v, want httpGet %s on http-metrics", p.probe, p.path)
			}
		}
		if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil {
			t.Error("no preStop sleep: the Service may still send while the activator stops")
		}
		if len(svc.Spec.Ports) == 0 || svc.Spec.Ports[0].Port != 80 || svc.Spec.Ports[0].TargetPort.StrVal != "http" {
			t.Errorf("Service ports %+v, want 80 to http first", svc.Spec.Ports)
		}
	})

	e := sharedEnv(t)
	t.Run("the API server takes deploy/base, the examples and the one-line grant", func(t *testing.T) {
		if out, err := e.kubectl(nil, "apply", "--dry-run=server", "-k", "../../kube/deploy/base"); err != nil {
			t.Fatal(err)
		} else if !strings.Contains(string(out), "podgate-activator") {
			t.Errorf("kubectl said:\n%s", out)
		}
		if _, err := e.kubectl(nil, "apply", "--dry-run=server", "-f", "../../kube/deploy/examples/"); err != nil {
			t.Fatal(err)
		}
		// docs/kubernetes.md's one-line grant, for a namespace of its own
		// (applied: the cluster is shared by every run of -count).
		if _, err := e.kubectl([]byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: grant\n"), "apply", "-f", "-"); err != nil {
			t.Fatal(err)
		}
		if out, err := e.kubectl(nil, "create", "rolebinding", "podgate:gate", "-n", "grant", "--clusterrole=podgate:gate", "--serviceaccount=grant:default", "--dry-run=server"); err != nil {
			t.Fatal(err)
		} else if !strings.Contains(string(out), "podgate:gate created (server dry run)") {
			t.Errorf("kubectl create rolebinding said %q", out)
		}
	})

	t.Run("deploy/knative sets queue-sidecar-image; how Knative was installed decides the command that keeps its other keys", func(t *testing.T) {
		knativeKeys := map[string]string{
			"queue-sidecar-image":               "gcr.io/knative-releases/knative.dev/serving/cmd/queue:v1.15.2",
			"registries-skipping-tag-resolving": "kind.local,ko.local,dev.local",
			"progress-deadline":                 "600s",
		}
		withPodgate := map[string]string{}
		for k, v := range knativeKeys {
			withPodgate[k] = v
		}
		withPodgate["queue-sidecar-image"] = "ghcr.io/podgate/podgate-gate:latest"
		podgateOnly := map[string]string{"queue-sidecar-image": "ghcr.io/podgate/podgate-gate:latest"}
		for _, tc := range []struct {
			name string
			// install makes Knative's ConfigMap (Knative itself is not
			// run here): kubectl's arguments, the manifest on stdin.
			install, set []string
			want         map[string]string
			wantLabel    bool
		}{
			{"installed with server-side apply: podgate's server-side apply takes its one key",
				[]string{"apply", "--server-side", "--field-manager=knative-installer", "-f", "-"},
				[]string{"apply", "--server-side", "--field-manager=podgate", "--force-conflicts", "-k", "../../kube/deploy/knative"},
				withPodgate, true},
			{"installed with client-side apply (Knative's documented install): a merge patch takes its one key",
				[]string{"apply", "-f", "-"},
				[]string{"patch", "-n", "knative-serving", "configmap", "config-deployment", "--type", "merge", "--patch-file", "../../kube/deploy/knative/config-deployment.yaml"},
				withPodgate, true},
			// kubectl's server-side apply first moves the client-side
			// apply's fields to the applying manager, which then drops
			// what its manifest lacks: docs/kubernetes.md warns of it.
			{"installed with client-side apply: a server-side apply drops Knative's other keys and labels",
				[]string{"apply", "-f", "-"},
				[]string{"apply", "--server-side", "--field-manager=podgate", "--force-conflicts", "-k", "../../kube/deploy/knative"},
				podgateOnly, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				installed := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: knative-serving\n---\n" +
					"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config-deployment\n  namespace: knative-serving\n" +
					"  labels:\n    app.kubernetes.io/name: knative-serving\ndata:\n"
				for _, k := range []string{"queue-sidecar-image", "registries-skipping-tag-resolving", "progress-deadline"} {
					installed += "  " + k + ": " + knativeKeys[k] + "\n"
				}
				_, _ = e.kubectl(nil, "delete", "configmap", "-n", "knative-serving", "config-deployment", "--ignore-not-found")
				if _, err := e.kubectl([]byte(installed), tc.install...); err != nil {
					t.Fatal(err)
				}
				if tc.set[0] == "apply" {
					dry := append(append([]string{}, tc.set[:len(tc.set)-2]...), "--dry-run=server", "-k", "../../kube/deploy/knative")
					if _, err := e.kubectl(nil, dry...); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := e.kubectl(nil, tc.set...); err != nil {
					t.Fatal(err)
				}
				cm, err := e.cs.CoreV1().ConfigMaps("knative-serving").Get(context.Background(), "config-deployment", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(cm.Data, tc.want) || (cm.Labels["app.kubernetes.io/name"] == "knative-serving") != tc.wantLabel {
					t.Errorf("config-deployment data %v labels %v, want %v (Knative's label kept: %v)", cm.Data, cm.Labels, tc.want, tc.wantLabel)
				}
			})
		}
	})
}
