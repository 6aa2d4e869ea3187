package webhook

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"go.uber.org/goleak"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	"github.com/podgate/podgate/admission/inject"
	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/node/proc"
)

func TestMain(m *testing.M) {
	// Before anything else: the guardian of the Supervisors these tests
	// start is this test binary, re-executed.
	proc.RunReaperIfAsked()
	goleak.VerifyTestMain(m)
}

const ownNamespace = "podgate-system"

var (
	podKind        = metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}
	deploymentKind = metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	knativeKind    = metav1.GroupVersionKind{Group: "serving.knative.dev", Version: "v1", Kind: "Service"}
)

func testInjector() *injector {
	return &injector{optIn: optIn{ownNamespace: ownNamespace}, opts: inject.Options{GateImage: "ghcr.io/podgate/podgate:test"}}
}

func testValidator(kind metav1.GroupVersionKind) *validator {
	return &validator{optIn: optIn{ownNamespace: ownNamespace}, group: kind.Group, kind: kind.Kind}
}

func review(kind metav1.GroupVersionKind, op admissionv1.Operation, namespace string, obj, old []byte) admission.Request {
	var meta objectMeta
	_ = json.Unmarshal(obj, &meta)
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "test", Kind: kind, Operation: op, Namespace: namespace, Name: meta.Metadata.Name,
		Object: runtime.RawExtension{Raw: obj},
	}}
	if old != nil {
		req.OldObject = runtime.RawExtension{Raw: old}
	}
	return req
}

func toJSON(t *testing.T, v any) []byte {
	t.Helper()
	var js []byte
	var err error
	if y, ok := v.(string); ok {
		js, err = yaml.YAMLToJSON([]byte(y))
	} else {
		js, err = json.Marshal(v)
	}
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func applyPatch(t *testing.T, obj []byte, resp admission.Response) []byte {
	t.Helper()
	ops, err := json.Marshal(resp.Patches)
	if err != nil {
		t.Fatal(err)
	}
	p, err := jsonpatch.DecodePatch(ops)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Apply(obj)
	if err != nil {
		t.Fatalf("the patch does not apply: %v\n%s", err, ops)
	}
	return out
}

// corpusPods are the pods of the manifests podgate's own tests inject:
// every valid example and corpus manifest, a Deployment's or Knative
// Service's template made a Pod of its namespace, as the webhook sees
// a workload's pods one by one.
func corpusPods(t *testing.T) map[string]*corev1.Pod {
	t.Helper()
	var files []string
	for _, pattern := range []string{"../testdata/valid/*", "../../examples/*.yaml"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	pods := map[string]*corev1.Pod{}
	for _, f := range files {
		m, err := workload.LoadFiles(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, w := range m.Workloads {
			pod := &corev1.Pod{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
				ObjectMeta: *w.Template.ObjectMeta.DeepCopy(),
				Spec:       *w.Template.Spec.DeepCopy(),
			}
			pod.Namespace = w.Namespace
			if pod.Name == "" || w.Kind != workload.KindPod {
				pod.Name = strings.ToLower(w.Name + "-pod")
			}
			pods[filepath.Base(f)+"/"+w.ID()] = pod
		}
	}
	if len(pods) < 15 {
		t.Fatalf("only %d corpus pods: the corpus moved?", len(pods))
	}
	return pods
}

// TestTheInjectionIsPodgateInjectAndIdempotent: the patch, applied to the
// pod the API server sent, gives the pod `podgate inject` prints, and
// admitting that pod again changes nothing.
func TestTheInjectionIsPodgateInjectAndIdempotent(t *testing.T) {
	h := testInjector()
	for name, pod := range corpusPods(t) {
		t.Run(name, func(t *testing.T) {
			// Defaulted as a Pod first, as the API server defaults what
			// it admits (a Knative template's periodSeconds: 0 becomes
			// 10).
			w, problems, err := loadWorkload(toJSON(t, pod), pod.Namespace)
			if err != nil || len(problems) > 0 {
				t.Fatalf("not a valid Pod: %v %v", err, problems)
			}
			raw := toJSON(t, w.Object())
			resp := h.Handle(t.Context(), review(podKind, admissionv1.Create, pod.Namespace, raw, nil))
			if !resp.Allowed || len(resp.Patches) == 0 || resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
				t.Fatalf("not injected: %+v", resp.Result)
			}
			injected := applyPatch(t, raw, resp)
			var got corev1.Pod
			if err := json.Unmarshal(injected, &got); err != nil {
				t.Fatal(err)
			}
			// The admin token is fresh per injection: the same one for
			// the comparison.
			token := contract.AdminTokenOf(contract.GateContainer(&got.Spec))
			if len(token) != 32 {
				t.Fatalf("the patched pod's admin token %q is not a fresh 128-bit one", token)
			}
			want, err := inject.Gate(w, inject.Options{GateImage: "ghcr.io/podgate/podgate:test", AdminToken: token})
			if err != nil {
				t.Fatal(err)
			}
			if wantPod := want.Object().(*corev1.Pod); !equality.Semantic.DeepEqual(&got, wantPod) {
				a, _ := yaml.Marshal(&got)
				b, _ := yaml.Marshal(wantPod)
				t.Fatalf("the patched pod differs from podgate inject's:\n--- patched\n%s\n--- podgate inject\n%s", a, b)
			}
			again := h.Handle(t.Context(), review(podKind, admissionv1.Create, pod.Namespace, injected, nil))
			if !again.Allowed || len(again.Patches) != 0 {
				t.Fatalf("re-admitting the injected pod: allowed %v, %d patches", again.Allowed, len(again.Patches))
			}
		})
	}
}

const plainPod = `
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  containers:
  - name: app
    image: ghcr.io/podgate/testapp
    ports: [{containerPort: 8080}]
    readinessProbe:
      httpGet: {path: /ready, port: 8080}
`

func withMeta(t *testing.T, manifest string, edit func(*corev1.Pod)) []byte {
	t.Helper()
	var pod corev1.Pod
	if err := json.Unmarshal(toJSON(t, manifest), &pod); err != nil {
		t.Fatal(err)
	}
	edit(&pod)
	return toJSON(t, &pod)
}

func TestWhatIsNeverInjected(t *testing.T) {
	h := testInjector()
	tests := []struct {
		name, namespace string
		kind            metav1.GroupVersionKind
		op              admissionv1.Operation
		obj             []byte
		want            string
	}{
		{"a pod in kube-system", KubeSystem, podKind, admissionv1.Create, toJSON(t, plainPod), "never admits objects in kube-system"},
		{"a pod in podgate's own namespace", ownNamespace, podKind, admissionv1.Create, toJSON(t, plainPod), "its own namespace podgate-system"},
		{"a pod that opted out", "shop", podKind, admissionv1.Create,
			withMeta(t, plainPod, func(p *corev1.Pod) { p.Labels[InjectLabel] = InjectDisabled }), "opted out"},
		{"a mirror pod", "shop", podKind, admissionv1.Create,
			withMeta(t, plainPod, func(p *corev1.Pod) { p.Annotations = map[string]string{mirrorPodAnnotation: "abc"} }), "mirror pod"},
		{"a Knative revision's pod", "shop", podKind, admissionv1.Create,
			withMeta(t, plainPod, func(p *corev1.Pod) { p.Labels[workload.LabelKnativeRevision] = "web-00001" }), "Knative revision web-00001"},
		{"an invalid pod (the validating webhook names why)", "shop", podKind, admissionv1.Create,
			withMeta(t, plainPod, func(p *corev1.Pod) { p.Spec.Containers[0].ReadinessProbe.HTTPGet.Port.IntVal = 70000 }),
			"not injected, the pod is invalid: Pod/web: spec.containers[0].readinessProbe.httpGet.port: Invalid value: 70000"},
		{"a pod update", "shop", podKind, admissionv1.Update, toJSON(t, plainPod), "when they are created"},
		{"not a pod", "shop", deploymentKind, admissionv1.Create, toJSON(t, plainPod), "Pods only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := h.Handle(t.Context(), review(tt.kind, tt.op, tt.namespace, tt.obj, nil))
			if !resp.Allowed || len(resp.Patches) != 0 {
				t.Fatalf("allowed %v with %d patches, want allowed unchanged", resp.Allowed, len(resp.Patches))
			}
			if resp.Result == nil || !strings.Contains(resp.Result.Message, tt.want) {
				t.Errorf("message %+v does not say %q", resp.Result, tt.want)
			}
		})
	}
}

func TestAControllersPodIsInjectedBeforeItHasAName(t *testing.T) {
	obj := withMeta(t, plainPod, func(p *corev1.Pod) { p.Name, p.GenerateName = "", "web-7d4b9c-" })
	resp := testInjector().Handle(t.Context(), review(podKind, admissionv1.Create, "shop", obj, nil))
	if !resp.Allowed || len(resp.Patches) == 0 {
		t.Fatalf("not injected: %+v", resp.Result)
	}
	var pod corev1.Pod
	if err := json.Unmarshal(applyPatch(t, obj, resp), &pod); err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.InitContainers) == 0 || pod.Spec.InitContainers[0].Name != "podgate" {
		t.Fatalf("no gate: %+v", pod.Spec.InitContainers)
	}
	for _, e := range pod.Spec.InitContainers[0].Env {
		if e.Name == "SERVING_NAMESPACE" && e.Value != "shop" {
			t.Errorf("SERVING_NAMESPACE %q, want the request's namespace", e.Value)
		}
	}
}

// TestTheVerdictsAreThoseOfPodgateValidate runs every invalid corpus
// manifest an API server could send (one object, decodable, no unknown
// or duplicate fields: the API server has settled those) through the
// validating webhooks: the message is podgate validate's golden output,
// line for line, without the file and document.
func TestTheVerdictsAreThoseOfPodgateValidate(t *testing.T) {
	files, err := filepath.Glob("../testdata/invalid/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]metav1.GroupVersionKind{workload.KindPod: podKind, workload.KindDeployment: deploymentKind, workload.KindService: knativeKind}
	covered := 0
	for _, f := range files {
		name := filepath.Base(f)
		m, err := workload.LoadFiles(f)
		var problems workload.Problems
		if len(m.Workloads) != 1 || (err != nil && !asProblems(err, &problems)) || hasDocumentOrStrictProblem(problems) {
			continue
		}
		golden, err := os.ReadFile(strings.TrimSuffix(f, ".yaml") + ".golden")
		if err != nil {
			t.Fatal(err)
		}
		prefix := name + ": doc 1: "
		var want []string
		for _, line := range strings.Split(strings.TrimSpace(string(golden)), "\n") {
			if !strings.HasPrefix(line, prefix) {
				t.Fatalf("%s: golden line %q is not about doc 1", name, line)
			}
			want = append(want, strings.TrimPrefix(line, prefix))
		}
		w := m.Workloads[0]
		covered++
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			kind := kinds[w.Kind]
			resp := testValidator(kind).Handle(t.Context(), review(kind, admissionv1.Create, w.Namespace, toJSON(t, string(raw)), nil))
			if resp.Allowed {
				t.Fatal("allowed")
			}
			if got := resp.Result.Message; got != strings.Join(want, "\n") {
				t.Errorf("message:\n%s\nwant podgate validate's:\n%s", got, strings.Join(want, "\n"))
			}
			if resp.Result.Code != http.StatusUnprocessableEntity || resp.Result.Reason != metav1.StatusReasonInvalid ||
				resp.Result.Details == nil || len(resp.Result.Details.Causes) != len(want) || resp.Result.Details.Kind != w.Kind {
				t.Errorf("status %+v, want 422 Invalid with one cause per problem", resp.Result)
			}
		})
	}
	if covered < 30 {
		t.Fatalf("only %d invalid manifests checked: the corpus moved?", covered)
	}
}

func asProblems(err error, ps *workload.Problems) bool {
	p, ok := err.(workload.Problems)
	*ps = p
	return ok
}

func hasDocumentOrStrictProblem(ps workload.Problems) bool {
	for _, p := range ps {
		if p.Type == workload.TypeDocumentInvalid || p.Detail == "unknown field" || p.Detail == "duplicate field" {
			return true
		}
	}
	return false
}

const execLivenessDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: ghcr.io/podgate/testapp
        ports: [{containerPort: 8080}]
        livenessProbe:
          exec: {command: [cat, /tmp/live]}
`

func TestValidation(t *testing.T) {
	deployment := toJSON(t, execLivenessDeployment)
	// edit changes a copy of the Deployment as JSON.
	edit := func(change func(d, template, container map[string]any)) []byte {
		var d map[string]any
		if err := json.Unmarshal(deployment, &d); err != nil {
			t.Fatal(err)
		}
		template := d["spec"].(map[string]any)["template"].(map[string]any)
		container := template["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
		change(d, template, container)
		return toJSON(t, d)
	}
	badPort := func(port int) []byte {
		return edit(func(_, _, c map[string]any) { c["ports"] = []any{map[string]any{"containerPort": port}} })
	}
	withUnknownField := edit(func(d, _, _ map[string]any) { d["spec"].(map[string]any)["fieldOfANewerAPIServer"] = true })
	optedOut := edit(func(_, tmpl, c map[string]any) {
		c["ports"] = []any{map[string]any{"containerPort": 70000}}
		tmpl["metadata"].(map[string]any)["labels"].(map[string]any)[InjectLabel] = InjectDisabled
	})
	execWarning := []string{"Deployment/web: spec.template.spec.containers[0].livenessProbe: exec probes stay with the kubelet/node agent, so the gate learns of a failure only when the container restarts"}
	tests := []struct {
		name         string
		op           admissionv1.Operation
		namespace    string
		obj, old     []byte
		allowed      bool
		wantMessage  string
		wantWarnings []string
	}{
		{"a valid workload passes with podgate's warnings", admissionv1.Create, "shop", deployment, nil, true, "", execWarning},
		{"an invalid one is refused", admissionv1.Create, "shop", badPort(70000), nil, false,
			"Deployment/web: spec.template.spec.containers[0].ports[0].containerPort: Invalid value: 70000", nil},
		{"an update keeps a problem the old object had", admissionv1.Update, "shop", badPort(70000), badPort(70000), true, "", execWarning},
		{"an update adds a problem", admissionv1.Update, "shop", badPort(70000), deployment, false, "containerPort: Invalid value: 70000", nil},
		{"an update changes the problem", admissionv1.Update, "shop", badPort(70001), badPort(70000), false, "containerPort: Invalid value: 70001", nil},
		{"fields of a newer API server are not problems", admissionv1.Create, "shop", withUnknownField, nil, true, "", execWarning},
		{"pods that opted out", admissionv1.Create, "shop", optedOut, nil, true, "its pods opted out", nil},
		{"kube-system", admissionv1.Create, KubeSystem, badPort(70000), nil, true, "never admits objects in kube-system", nil},
		{"a deletion", admissionv1.Delete, "shop", badPort(70000), nil, true, "creations and updates only", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := testValidator(deploymentKind).Handle(t.Context(), review(deploymentKind, tt.op, tt.namespace, tt.obj, tt.old))
			if resp.Allowed != tt.allowed {
				t.Fatalf("allowed %v, want %v: %+v", resp.Allowed, tt.allowed, resp.Result)
			}
			if tt.wantMessage != "" && (resp.Result == nil || !strings.Contains(resp.Result.Message, tt.wantMessage)) {
				t.Errorf("message %+v does not say %q", resp.Result, tt.wantMessage)
			}
			if strings.Join(resp.Warnings, "\n") != strings.Join(tt.wantWarnings, "\n") {
				t.Errorf("warnings %q, want %q", resp.Warnings, tt.wantWarnings)
			}
		})
	}
	t.Run("another kind is not this webhook's", func(t *testing.T) {
		resp := testValidator(deploymentKind).Handle(t.Context(), review(podKind, admissionv1.Create, "shop", toJSON(t, plainPod), nil))
		if !resp.Allowed || !strings.Contains(resp.Result.Message, "checks Deployment only") {
			t.Errorf("%+v", resp.Result)
		}
	})
}

// BenchmarkAdmission is podgate's own share of an admission: decoding,
// validation, injection and the patch, without TLS or the API server.
func BenchmarkAdmission(b *testing.B) {
	raw, err := yaml.YAMLToJSON([]byte(plainPod))
	if err != nil {
		b.Fatal(err)
	}
	inject, validate := testInjector(), testValidator(podKind)
	b.Run("inject", func(b *testing.B) {
		req := review(podKind, admissionv1.Create, "shop", raw, nil)
		for b.Loop() {
			if resp := inject.Handle(b.Context(), req); len(resp.Patches) == 0 {
				b.Fatal("not injected")
			}
		}
	})
	b.Run("validate", func(b *testing.B) {
		req := review(podKind, admissionv1.Create, "shop", raw, nil)
		for b.Loop() {
			if resp := validate.Handle(b.Context(), req); !resp.Allowed {
				b.Fatal("refused")
			}
		}
	})
}
