package runtime

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/objstore"
	"github.com/podgate/podgate/podspec"
)

// DefaultDomain is Knative's default domain: a Service's URL is
// http://NAME.NAMESPACE.example.com.
const DefaultDomain = "example.com"

// syncServiceLocked writes a Knative Service's object with a basic status: its
// URL and revision, Ready while at least one pod's endpoint is ready.
// Callers hold wl.mu. (The front door refines these conditions with what
// traffic does.)
func (wl *workload) syncServiceLocked(readyEndpoints int) {
	k := wl.w.Knative
	if k == nil {
		return
	}
	svc := &objstore.KnativeService{
		ObjectMeta: metav1.ObjectMeta{Name: wl.w.Name, Namespace: wl.w.Namespace, Labels: copyMap(wl.w.Labels), Generation: 1},
	}
	if obj, ok := wl.w.Object().(*podspec.Service); ok {
		if spec, err := json.Marshal(obj.Spec); err == nil {
			svc.Spec = spec
		}
	}
	url := fmt.Sprintf("http://%s.%s.%s", wl.w.Name, wl.w.Namespace, DefaultDomain)
	st := &svc.Status
	st.ObservedGeneration = 1
	st.URL = url
	st.Address = &objstore.KnativeAddressable{URL: fmt.Sprintf("http://%s.%s.svc.cluster.local", wl.w.Name, wl.w.Namespace)}
	st.LatestCreatedRevisionName = k.RevisionName
	status, reason, message := corev1.ConditionTrue, "", ""
	if readyEndpoints == 0 {
		status = corev1.ConditionUnknown
		if wl.everReady {
			reason, message = "NoHealthyBackends", fmt.Sprintf("Revision %q has no ready pod.", k.RevisionName)
		} else {
			reason, message = "RevisionMissing", fmt.Sprintf("Configuration %q is waiting for a Revision to become ready.", wl.w.Name)
		}
	} else {
		wl.everReady = true
		st.LatestReadyRevisionName = k.RevisionName
		pct, latest := int64(100), true
		st.Traffic = []objstore.KnativeTraffic{{RevisionName: k.RevisionName, LatestRevision: &latest, Percent: &pct}}
	}
	now := metav1.NewTime(wl.a.clock.Now())
	for _, t := range []string{"ConfigurationsReady", "Ready", "RoutesReady"} {
		c := objstore.KnativeCondition{Type: t, Status: status, Reason: reason, Message: message, LastTransitionTime: now}
		if prev := wl.serviceConds[t]; prev.Status == status {
			c.LastTransitionTime = prev.LastTransitionTime
		}
		wl.serviceConds[t] = c
		st.Conditions = append(st.Conditions, c)
	}
	if _, err := wl.a.store.Services.Put(svc); err != nil {
		wl.a.log.Warn("publish service", "workload", wl.w.ID(), "err", err)
	}
}
