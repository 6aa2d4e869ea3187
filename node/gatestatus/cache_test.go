package gatestatus

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// TestADeletionFoundByARelistEndsTheWatchWithoutAMadeUpVersion: a pod
// deleted while the informer's watch was broken comes back as
// DeletedFinalStateUnknown, without the deletion's version. The cache
// marks it deleted at the latest version it has seen (never a version of
// its own making, which a client could carry to the next service), and a
// watcher of the pod ends with DELETED.
func TestADeletionFoundByARelistEndsTheWatchWithoutAMadeUpVersion(t *testing.T) {
	c := newPodCache(time.Now)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gone", UID: "u1", ResourceVersion: "10"}}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "other", UID: "u2", ResourceVersion: "15"}}
	h := c.handler()
	h.OnAdd(pod, true)
	h.OnAdd(other, true)
	_, _, changed := c.get(keyOf("default", "gone"))
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "default/gone", Obj: pod})
	select {
	case <-changed:
	default:
		t.Fatal("the deletion did not ring")
	}
	st, seen, _ := c.get(keyOf("default", "gone"))
	if st == nil || !st.deleted || st.rv != 15 || seen != 15 {
		t.Fatalf("state %+v at %d, want deleted at 15, the latest version seen", st, seen)
	}
	rec := httptest.NewRecorder()
	ws := &watchStream{w: rec, rc: http.NewResponseController(rec), enc: json.NewEncoder(rec), uid: "u1", pod: pod}
	var ev rawEvent
	if ws.step(st, seen) || json.Unmarshal(rec.Body.Bytes(), &ev) != nil || ev.Type != watch.Deleted || ev.Object.UID != "u1" {
		t.Errorf("the watcher sent %s and went on, want DELETED of the pod and the end", rec.Body)
	}
	// Forgotten once the watches of it are long over.
	c.forget(time.Now().Add(time.Minute))
	if st, _, _ := c.get(keyOf("default", "gone")); st != nil {
		t.Errorf("the deleted pod is still remembered: %+v", st)
	}
}
