package server

import (
	"context"
	"fmt"
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

	"github.com/podgate/podgate/gate/contract"
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
				{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			},
			"podgate:node-status": {
				{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
				{APIGroups: []string{""}, Resources: []string{"pods/status"}, Verbs: []string{"patch"}},
				{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			},
		}
		for name, rules := range want {
			if !reflect.DeepEqual(roles[name], rules) {
				t.Errorf("ClusterRole %s rules %+v, want %+v", name, roles[name], rules)
			}
		}
		// Every grant is to podgate's own service accounts: the injected
		// pods' get none (labelling a namespace is the only step).
		for _, o := range built["../../kube/deploy/base"] {
			if o["kind"] != "ClusterRoleBinding" && o["kind"] != "RoleBinding" {
				continue
			}
			var b rbacv1.RoleBinding
			decodeAs(t, o, &b)
			for _, s := range b.Subjects {
				if s.Kind != rbacv1.ServiceAccountKind || s.Namespace != "podgate-system" {
					t.Errorf("%s %s grants %s %s/%s: want podgate's own service accounts only", o["kind"], b.Name, s.Kind, s.Namespace, s.Name)
				}
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
		if spec.ServiceAccountName != "podgate-activator" || c.Image != "ghcr.io/podgate/podgate:v0.3.0" || len(c.Args) == 0 || c.Args[0] != "activator" {
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

	t.Run("deploy/base runs the node status service on every node's address, least privileged", func(t *testing.T) {
		testNodeStatusDaemonSet(t, built["../../kube/deploy/base"])
	})

	e := sharedEnv(t)
	t.Run("the API server takes deploy/base", func(t *testing.T) {
		out, err := e.kubectl(nil, "apply", "--dry-run=server", "-k", "../../kube/deploy/base")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"deployment.apps/podgate-activator", "daemonset.apps/podgate-node-status",
			"validatingadmissionpolicy.admissionregistration.k8s.io/podgate-node-status"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("kubectl said nothing of %s:\n%s", want, out)
			}
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
		withPodgate["queue-sidecar-image"] = "ghcr.io/podgate/podgate-gate:v0.3.0"
		podgateOnly := map[string]string{"queue-sidecar-image": "ghcr.io/podgate/podgate-gate:v0.3.0"}
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

// testNodeStatusDaemonSet pins the node status service's DaemonSet: on
// the node's network at the node's address and contract.NodeStatusPort
// (where the injected gates ask), on every node whatever its taints, as
// its own service account, probed on its port, and confined.
func testNodeStatusDaemonSet(t *testing.T, objs []map[string]any) {
	t.Helper()
	var ds *appsv1.DaemonSet
	for _, o := range objs {
		if md, _ := o["metadata"].(map[string]any); o["kind"] == "DaemonSet" && md["name"] == "podgate-node-status" {
			ds = &appsv1.DaemonSet{}
			decodeAs(t, o, ds)
		}
	}
	if ds == nil {
		t.Fatal("deploy/base has no DaemonSet podgate-node-status")
	}
	spec := ds.Spec.Template.Spec
	if !spec.HostNetwork || spec.ServiceAccountName != "podgate-node-status" {
		t.Errorf("hostNetwork %v, service account %q: want the node's network, podgate-node-status", spec.HostNetwork, spec.ServiceAccountName)
	}
	if len(spec.Tolerations) != 1 || spec.Tolerations[0].Operator != corev1.TolerationOpExists || spec.Tolerations[0].Key != "" {
		t.Errorf("tolerations %+v, want one that tolerates every taint", spec.Tolerations)
	}
	c := spec.Containers[0]
	port := fmt.Sprint(contract.NodeStatusPort)
	wantArgs := []string{"node-status", "--node=$(NODE_NAME)", "--listen=$(HOST_IP):" + port}
	if c.Image != "ghcr.io/podgate/podgate:v0.3.0" || !reflect.DeepEqual(c.Args, wantArgs) {
		t.Errorf("image %q args %q, want podgate's image with %q", c.Image, c.Args, wantArgs)
	}
	fields := map[string]string{}
	for _, v := range c.Env {
		if v.ValueFrom == nil || v.ValueFrom.FieldRef == nil {
			t.Errorf("env %s is not from the downward API", v.Name)
			continue
		}
		fields[v.Name] = v.ValueFrom.FieldRef.FieldPath
	}
	if fields["NODE_NAME"] != "spec.nodeName" || fields["HOST_IP"] != "status.hostIP" {
		t.Errorf("env %v, want NODE_NAME from spec.nodeName and HOST_IP from status.hostIP", fields)
	}
	if len(c.Ports) != 1 || fmt.Sprint(c.Ports[0].ContainerPort) != port {
		t.Errorf("ports %+v, want %s", c.Ports, port)
	}
	for _, p := range []struct {
		what  string
		probe *corev1.Probe
		path  string
	}{{"startup", c.StartupProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}, {"liveness", c.LivenessProbe, "/healthz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.StrVal != c.Ports[0].Name {
			t.Errorf("%s probe %+v, want httpGet %s on its port", p.what, p.probe, p.path)
		}
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("requests %v, want cpu and memory", c.Resources.Requests)
	}
	sc, psc := c.SecurityContext, spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil || !reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("security context pod %+v container %+v, want non-root, read-only root, no escalation, every capability dropped", psc, sc)
	}
}
