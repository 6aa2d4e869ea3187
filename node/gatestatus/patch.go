package gatestatus

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podgate/podgate/gate/contract"
)

// maxPatch bounds a patch's body: the gate's is a few hundred bytes.
const maxPatch = 64 << 10

// conditionFields are the fields of a pod condition a gate may set.
var conditionFields = []string{"type", "status", "reason", "message", "lastTransitionTime", "lastProbeTime", "observedGeneration"}

// gateCondition checks that patch, a strategic merge patch of a pod's
// status, sets the gate's condition and nothing else, and returns that
// condition. The error says what else the patch touches, by field path.
func gateCondition(patch []byte) (map[string]any, error) {
	var top map[string]any
	if err := json.Unmarshal(patch, &top); err != nil {
		return nil, fmt.Errorf("the patch is not a JSON object: %w", err)
	}
	if err := onlyKey(top, "", "status"); err != nil {
		return nil, err
	}
	status, ok := top["status"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("status: must be an object")
	}
	if err := onlyKey(status, "status.", "conditions"); err != nil {
		return nil, err
	}
	conds, ok := status["conditions"].([]any)
	if !ok || len(conds) != 1 {
		return nil, fmt.Errorf("status.conditions: must list exactly one condition, %q", contract.ContainersReadyCondition)
	}
	cond, ok := conds[0].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("status.conditions[0]: must be an object")
	}
	if t, _ := cond["type"].(string); t != contract.ContainersReadyCondition {
		return nil, fmt.Errorf("status.conditions[0].type: %q: only the condition %q may be set", cond["type"], contract.ContainersReadyCondition)
	}
	for _, k := range sortedKeys(cond) {
		if !slices.Contains(conditionFields, k) {
			return nil, fmt.Errorf("status.conditions[0].%s: not a field of a pod condition this service writes", k)
		}
	}
	switch cond["status"] {
	case string(corev1.ConditionTrue), string(corev1.ConditionFalse), string(corev1.ConditionUnknown):
	default:
		return nil, fmt.Errorf("status.conditions[0].status: %v: must be True, False or Unknown", cond["status"])
	}
	return cond, nil
}

// onlyKey refuses every key of m but want (directives such as $patch
// included), naming the first other one by its path.
func onlyKey(m map[string]any, prefix, want string) error {
	for _, k := range sortedKeys(m) {
		if k != want {
			return fmt.Errorf("%s%s: the patch may change only status.conditions[type=%s]", prefix, k, contract.ContainersReadyCondition)
		}
	}
	if _, ok := m[want]; !ok {
		return fmt.Errorf("%s%s: missing", prefix, want)
	}
	return nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// servePatch answers a gate's patch of its own pod's status: checked,
// then forwarded (coalesced with the pod's other writes) with the pod's
// UID as precondition.
func (s *Service) servePatch(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	caller, ok := s.identify(w, r, verbPatch, ns, name)
	if !ok {
		return
	}
	refused := func(reason, why string) {
		s.refuse(w, r, verbPatch, caller, reason, fmt.Sprintf("patch of pod %s/%s status from %s refused: %s", ns, name, r.RemoteAddr, why))
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != string(types.StrategicMergePatchType) {
		refused(reasonPatchType, fmt.Sprintf("content type %q: only %s is accepted (a merge patch would replace every condition of the pod)", mt, types.StrategicMergePatchType))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxPatch+1))
	if err != nil || len(body) > maxPatch {
		refused(reasonNotCondition, fmt.Sprintf("the body could not be read or is over %d bytes", maxPatch))
		return
	}
	cond, err := gateCondition(body)
	if err != nil {
		refused(reasonNotCondition, err.Error())
		return
	}
	res := s.writes.write(r.Context(), caller, cond)
	if r.Context().Err() != nil {
		// The gate gave up (or the service stops): nobody to answer, and
		// no fault of the API server's to tell on the pod.
		return
	}
	if res.err != nil {
		s.metrics.requests.WithLabelValues(verbPatch, outcomeFailed).Inc()
		s.writeFailed(w, caller, res.err)
		return
	}
	s.metrics.requests.WithLabelValues(verbPatch, outcomeOK).Inc()
	writeJSON(w, http.StatusOK, res.pod)
}
