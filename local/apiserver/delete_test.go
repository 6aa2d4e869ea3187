package apiserver

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/local/apiserver/resources"
	"github.com/podgate/podgate/local/objstore"
)

// storeDeleter does what the node agent's PodDeleter does to the store:
// it marks the pod terminating (or removes it when told to be immediate)
// and returns without waiting.
type storeDeleter struct {
	store *objstore.Store
	now   time.Time
	fail  error

	mu   sync.Mutex
	seen []metav1.DeleteOptions
}

func (d *storeDeleter) DeletePod(_ context.Context, ns, name string, opts metav1.DeleteOptions) error {
	d.mu.Lock()
	d.seen = append(d.seen, opts)
	d.mu.Unlock()
	if d.fail != nil {
		return d.fail
	}
	if g := opts.GracePeriodSeconds; g != nil && *g == 0 {
		_, err := d.store.Pods.Delete(ns, name)
		return err
	}
	_, err := d.store.Pods.Modify(ns, name, func(p *corev1.Pod) error {
		ts := metav1.NewTime(d.now)
		grace := int64(30)
		if opts.GracePeriodSeconds != nil {
			grace = *opts.GracePeriodSeconds
		}
		p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &ts, &grace
		return nil
	})
	return err
}

func (d *storeDeleter) calls() []metav1.DeleteOptions {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]metav1.DeleteOptions(nil), d.seen...)
}

func TestDeleteStartsTerminationAndReturnsTheTerminatingPod(t *testing.T) {
	store := objstore.New(objstore.Options{})
	d := &storeDeleter{store: store, now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	s := startServer(t, Config{Store: store, Pods: d})
	s.createPod(t, testPod("default", "web", nil))

	grace := int64(7)
	p, err := s.deletePod(t.Context(), "default", "web", metav1.DeleteOptions{GracePeriodSeconds: &grace})
	if err != nil {
		t.Fatal(err)
	}
	if p == nil || p.DeletionTimestamp == nil || !p.DeletionTimestamp.Time.Equal(d.now) || *p.DeletionGracePeriodSeconds != 7 {
		t.Fatalf("returned pod %+v, want it terminating with grace 7", p)
	}
	if p.Kind != "Pod" {
		t.Errorf("kind %q", p.Kind)
	}
	if seen := d.calls(); len(seen) != 1 || *seen[0].GracePeriodSeconds != 7 {
		t.Errorf("deleter saw %+v", seen)
	}
}

func TestDeleteOfAPodThatIsGoneAtOnceAnswersSuccess(t *testing.T) {
	store := objstore.New(objstore.Options{})
	s := startServer(t, Config{Store: store, Pods: &storeDeleter{store: store}})
	created := s.createPod(t, testPod("default", "web", nil))

	code, body := s.raw(t, http.MethodDelete, "/api/v1/namespaces/default/pods/web?gracePeriodSeconds=0")
	st := decodeStatus(t, body)
	if code != 200 || st.Status != metav1.StatusSuccess || st.Details == nil || st.Details.Name != "web" || st.Details.Kind != "pods" || st.Details.UID != created.UID {
		t.Errorf("%d %+v", code, st)
	}

	s.createPod(t, testPod("default", "again", nil))
	zero := int64(0)
	p, err := s.deletePod(t.Context(), "default", "again", metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if err != nil || p != nil {
		t.Errorf("client: pod %v err %v, want nil, nil", p, err)
	}
}

func TestDeleteErrors(t *testing.T) {
	store := objstore.New(objstore.Options{})
	failing := &storeDeleter{store: store, fail: errors.New("process table full")}
	refusing := &storeDeleter{store: store, fail: apierrors.NewConflict(resources.Pods.GroupResource(), "web", errors.New("already terminating"))}
	tests := []struct {
		name    string
		deleter PodDeleter
		path    string
		code    int
		message string
	}{
		{"a missing pod is 404 and the deleter is not called", failing, "/api/v1/namespaces/default/pods/nope", 404, `pods "nope" not found`},
		{"a negative grace period is 400", failing, "/api/v1/namespaces/default/pods/web?gracePeriodSeconds=-1", 400, `gracePeriodSeconds: Invalid value: -1: must be greater than or equal to 0`},
		{"a grace period that is not a number is 400", failing, "/api/v1/namespaces/default/pods/web?gracePeriodSeconds=soon", 400, `gracePeriodSeconds "soon"`},
		{"a deleter's StatusError keeps its code", refusing, "/api/v1/namespaces/default/pods/web", 409, `already terminating`},
		{"a deleter's plain error is a 500", failing, "/api/v1/namespaces/default/pods/web", 500, `process table full`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startServer(t, Config{Store: objstore.New(objstore.Options{}), Pods: tt.deleter})
			s.createPod(t, testPod("default", "web", nil))
			code, body := s.raw(t, http.MethodDelete, tt.path)
			st := decodeStatus(t, body)
			if code != tt.code || int(st.Code) != tt.code || !strings.Contains(st.Message, tt.message) {
				t.Errorf("%d %+v, want %d with %q", code, st, tt.code, tt.message)
			}
		})
	}
	if f, r := len(failing.calls()), len(refusing.calls()); f != 1 || r != 1 {
		t.Errorf("deleters called %d and %d times, want once each (only for requests that passed checks)", f, r)
	}
}

func TestClientDeleteOfAMissingPodIsNotFound(t *testing.T) {
	store := objstore.New(objstore.Options{})
	s := startServer(t, Config{Store: store, Pods: &storeDeleter{store: store}})
	_, err := s.deletePod(t.Context(), "default", "nope", metav1.DeleteOptions{})
	if !apierrors.IsNotFound(err) || err.Error() != `pods "nope" not found` {
		t.Errorf("err = %v", err)
	}
}

// seeingDeleter records whether the pod already carried its
// deletionTimestamp when the (transitional) PodDeleter was called.
type seeingDeleter struct {
	store *objstore.Store
	saw   chan *metav1.Time
}

func (d *seeingDeleter) DeletePod(_ context.Context, ns, name string, _ metav1.DeleteOptions) error {
	p, err := d.store.Pods.Get(ns, name)
	if err != nil {
		return err
	}
	d.saw <- p.DeletionTimestamp
	return nil
}

func TestDeleteOfABoundPodSetsTheTimestampBeforeThePodDeleter(t *testing.T) {
	store := objstore.New(objstore.Options{})
	d := &seeingDeleter{store: store, saw: make(chan *metav1.Time, 1)}
	s := startServer(t, Config{Store: store, Pods: d})
	p := testPod("default", "web", nil)
	p.Spec.NodeName = "node-1"
	s.createPod(t, p)
	out, err := s.deletePod(t.Context(), "default", "web", metav1.DeleteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ts := <-d.saw; ts == nil {
		t.Error("the PodDeleter was called before the deletionTimestamp was set")
	}
	if out == nil || out.DeletionTimestamp == nil || *out.DeletionGracePeriodSeconds != 30 {
		t.Fatalf("answer %+v, want the pod terminating with the default 30 s", out)
	}
}
