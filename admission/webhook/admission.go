package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/podgate/podgate/admission/inject"
	"github.com/podgate/podgate/admission/validation"
	"github.com/podgate/podgate/admission/workload"
)

// admissionSource names the admitted object where workload would name a
// file; messages leave it out.
const admissionSource = "admission"

// loadWorkload reads the admitted object exactly as `podgate validate`
// reads a manifest (strict decoding, the API server's and Knative's
// defaults, podgate's rules) and validates it. The namespace is the
// request's: a pod being created need not name its own.
//
// Unknown fields are not problems here: the API server has already
// decided which fields exist, and one newer than podgate's API types
// sends fields podgate does not know.
func loadWorkload(raw []byte, namespace string) (*workload.Workload, workload.Problems, error) {
	m, err := workload.Load(bytes.NewReader(raw), admissionSource)
	var problems workload.Problems
	if err != nil && !errors.As(err, &problems) {
		return nil, nil, err
	}
	problems = slices.DeleteFunc(problems, func(p workload.Problem) bool {
		return p.Type == string(field.ErrorTypeForbidden) && p.Detail == "unknown field"
	})
	if len(m.Workloads) != 1 {
		if len(problems) > 0 {
			return nil, problems, nil
		}
		return nil, nil, errors.New("the object is not a Pod, Deployment or Knative Service")
	}
	w := m.Workloads[0]
	if namespace != "" {
		w.Namespace = namespace
	}
	return w, append(problems, w.Problems(validation.Validate(w))...), nil
}

// problemLine is a problem as `podgate validate` prints it, without the
// file and document (an admitted object has neither):
// `Kind/name: field.path: message`.
func problemLine(p workload.Problem) string {
	return strings.TrimPrefix(p.Error(), fmt.Sprintf("%s: doc %d: ", p.File, p.Doc))
}

// deny refuses the object as the API server refuses an invalid one: 422
// Invalid, one line per problem, and each problem as a cause with its
// field path, so `kubectl` and client-go's apierrors.IsInvalid see what
// they see for the API server's own validation.
func deny(req admission.Request, problems workload.Problems) admission.Response {
	lines := make([]string, len(problems))
	causes := make([]metav1.StatusCause, len(problems))
	for i, p := range problems {
		lines[i] = problemLine(p)
		causes[i] = metav1.StatusCause{Type: metav1.CauseType(p.Type), Message: p.Message, Field: p.Field}
	}
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{
		Allowed: false,
		Result: &metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    http.StatusUnprocessableEntity,
			Reason:  metav1.StatusReasonInvalid,
			Message: strings.Join(lines, "\n"),
			Details: &metav1.StatusDetails{Name: req.Name, Group: req.Kind.Group, Kind: req.Kind.Kind, Causes: causes},
		},
	}}
}

// injector is the mutating webhook: it puts the gate into pods that opted
// in, with the same injection as `podgate inject`.
type injector struct {
	optIn
	opts    inject.Options
	knative inject.KnativeOptions
}

// Handle returns the injection as a JSON patch. A pod that is invalid is
// let through unchanged: the validating webhook, which runs after every
// mutation, refuses it with podgate's message, and injection is only
// defined for valid pods.
func (h *injector) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Kind.Group != "" || req.Kind.Kind != "Pod" || req.Operation != admissionv1.Create {
		return admission.Allowed("podgate injects Pods only, when they are created")
	}
	meta, err := readMeta(req.Object.Raw)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if why := h.neverAdmitted(req.Namespace, meta); why != "" {
		return admission.Allowed("not injected: " + why)
	}
	if rev := meta.Metadata.Labels[workload.LabelKnativeRevision]; rev != "" {
		return h.adoptKnative(req, rev)
	}
	w, problems, err := loadWorkload(req.Object.Raw, req.Namespace)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if meta.Metadata.Name == "" && meta.Metadata.GenerateName != "" {
		// A controller's pod gets its name after mutation, before
		// validation: podgate's own rule for a fixed name does not
		// apply to it.
		problems = slices.DeleteFunc(problems, func(p workload.Problem) bool {
			return p.Field == "metadata.name" && p.Type == string(field.ErrorTypeRequired)
		})
	}
	if len(problems) > 0 {
		return admission.Allowed("not injected, the pod is invalid: " + problemLine(problems[0]))
	}
	if w.IsInjected() {
		return admission.Allowed("the gate is already injected")
	}
	injected, err := inject.Gate(w, h.opts)
	if err != nil {
		return admission.Denied("podgate cannot inject the gate: " + err.Error())
	}
	// Both sides of the patch are the pod as podgate's types see it, so
	// the patch holds the injection only; fields of a newer API server
	// that podgate's types lack are left as they are.
	before, err := json.Marshal(w.Object())
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	after, err := json.Marshal(injected.Object())
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(before, after)
}

// adoptKnative makes the gate that Knative started as a revision pod's
// queue-proxy podgate's gate (inject.AdoptKnativeQueue). A revision pod
// whose queue container is Knative's own queue-proxy is left alone:
// podgate validated its Knative Service, and a second gate beside
// queue-proxy would clash on its ports.
func (h *injector) adoptKnative(req admission.Request, revision string) admission.Response {
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("read the pod: %w", err))
	}
	if !inject.IsKnativeGate(&pod, h.opts.GateImage) {
		return admission.Allowed("not injected: part of Knative revision " + revision + ", whose queue container is not the gate")
	}
	adopted, err := inject.AdoptKnativeQueue(&pod, h.knative)
	if err != nil {
		return admission.Denied("podgate cannot adopt Knative's queue container: " + err.Error())
	}
	before, err := json.Marshal(&pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	after, err := json.Marshal(adopted)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(before, after)
}

// validator is a validating webhook for one kind: Pod, Deployment or
// Knative Service.
type validator struct {
	optIn
	group, kind string
}

// Handle refuses an object with the problems `podgate validate` reports
// for it, and passes podgate's warnings on as admission warnings. An
// update is refused only for problems the old object did not have (as
// the API server ratchets its own new rules), so an object that predates
// podgate, or a rule of it, can still be scaled, labelled or deleted.
func (h *validator) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Kind.Group != h.group || req.Kind.Kind != h.kind {
		return admission.Allowed(fmt.Sprintf("this webhook checks %s only", h.kind))
	}
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("podgate checks creations and updates only")
	}
	meta, err := readMeta(req.Object.Raw)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if why := h.skip(req.Namespace, meta); why != "" {
		return admission.Allowed("not checked: " + why)
	}
	w, problems, err := loadWorkload(req.Object.Raw, req.Namespace)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if w != nil && h.kind != "Pod" && w.Template.Labels[InjectLabel] == InjectDisabled {
		return admission.Allowed("not checked: its pods opted out (" + InjectLabel + "=" + InjectDisabled + ")")
	}
	if req.Operation == admissionv1.Update && len(problems) > 0 {
		problems = newProblems(problems, req.OldObject.Raw, req.Namespace)
	}
	if len(problems) > 0 {
		return deny(req, problems)
	}
	if w == nil {
		return admission.Allowed("") // undecodable before and after: nothing new
	}
	var warnings []string
	for _, warn := range w.Warnings() {
		warnings = append(warnings, w.ID()+": "+warn)
	}
	return admission.Allowed("").WithWarnings(warnings...)
}

// newProblems drops the problems the old object had already.
func newProblems(problems workload.Problems, oldRaw []byte, namespace string) workload.Problems {
	_, old, err := loadWorkload(oldRaw, namespace)
	if err != nil {
		return problems
	}
	had := map[string]bool{}
	for _, p := range old {
		had[problemLine(p)] = true
	}
	return slices.DeleteFunc(problems, func(p workload.Problem) bool { return had[problemLine(p)] })
}
