package objstore

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/local/servingv1"
)

func knativeHello() *servingv1.Service {
	latest, pct := true, int64(100)
	return &servingv1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hello"},
		Spec:       json.RawMessage(`{"template":{"spec":{"containers":[{"image":"ghcr.io/podgate/testapp"}]}}}`),
		Status: servingv1.ServiceStatus{
			Conditions: []servingv1.Condition{
				{Type: "ConfigurationsReady", Status: corev1.ConditionTrue},
				{Type: "Ready", Status: corev1.ConditionFalse, Reason: "RevisionMissing", LastTransitionTime: metav1.NewTime(epoch)},
			},
			URL:                       "http://hello.default.example.com",
			Address:                   &servingv1.Addressable{URL: "http://hello.default.svc.cluster.local"},
			LatestCreatedRevisionName: "hello-00001",
			Traffic:                   []servingv1.TrafficTarget{{RevisionName: "hello-00001", LatestRevision: &latest, Percent: &pct}},
		},
	}
}

func TestKnativeServiceCopiesShareNothing(t *testing.T) {
	a := knativeHello()
	b := a.DeepCopy()
	b.Spec[2] = 'X'
	b.Status.Conditions[0].Status = corev1.ConditionFalse
	b.Status.Address.URL = "changed"
	*b.Status.Traffic[0].Percent = 0
	*b.Status.Traffic[0].LatestRevision = false
	if string(a.Spec[2]) != "t" || a.Status.Conditions[0].Status != corev1.ConditionTrue ||
		a.Status.Address.URL == "changed" || *a.Status.Traffic[0].Percent != 100 || !*a.Status.Traffic[0].LatestRevision {
		t.Errorf("a copy shares memory with the original: %+v", a.Status)
	}
	var nilSvc *servingv1.Service
	if nilSvc.DeepCopyObject() != nil {
		t.Error("DeepCopyObject of nil is not nil")
	}
}

func TestKnativeServiceJSONIsKnativesShape(t *testing.T) {
	s := newTestStore(Options{})
	out, err := s.Services.Create(knativeHello())
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"apiVersion":"serving.knative.dev/v1"`, `"kind":"Service"`,
		`"url":"http://hello.default.example.com"`,
		`"latestCreatedRevisionName":"hello-00001"`,
		`{"type":"Ready","status":"False","lastTransitionTime":"2026-01-02T03:04:05Z","reason":"RevisionMissing"}`,
		`"spec":{"template":{"spec":{"containers":[{"image":"ghcr.io/podgate/testapp"}]}}}`,
	} {
		if !strings.Contains(string(data), want) {
			t.Errorf("JSON lacks %s:\n%s", want, data)
		}
	}
	if c := out.Status.Condition("Ready"); c == nil || c.Reason != "RevisionMissing" {
		t.Errorf("Condition(Ready) = %+v", c)
	}
	if out.Status.Condition("RoutesReady") != nil {
		t.Error("Condition of a missing type is not nil")
	}
	list := &servingv1.ServiceList{Items: []servingv1.Service{*out}}
	if cp := list.DeepCopyObject().(*servingv1.ServiceList); cp.Items[0].Status.URL != out.Status.URL {
		t.Errorf("list copy lost items: %+v", cp)
	}
}
