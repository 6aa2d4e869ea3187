package gatestatus

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// rawEvent is one watch event as sent on the wire.
type rawEvent struct {
	Type   watch.EventType `json:"type"`
	Object corev1.Pod      `json:"object"`
}

// openWatch starts a watch from the caller's address and returns its
// events as they arrive; the channel closes when the stream ends.
func openWatch(t *testing.T, c *http.Client, url string) (<-chan rawEvent, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("watch %s: %s", url, resp.Status)
	}
	out := make(chan rawEvent, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var ev rawEvent
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				out <- ev
			}
		}
	}()
	stop := func() {
		cancel()
		for range out {
		}
		<-done
	}
	t.Cleanup(stop)
	return out, stop
}

func next(t *testing.T, events <-chan rawEvent, what string) (rawEvent, bool) {
	t.Helper()
	select {
	case ev, ok := <-events:
		return ev, ok
	case <-time.After(testWait):
		t.Fatalf("no %s within %s", what, testWait)
	}
	return rawEvent{}, false
}

// TestTheWatchFormsAClientUsesAreServedAsTheAPIServerServesThem pins
// the wire forms of client-go's reflector against the service: a list
// with a version, a watch from that version that sends only what
// changed after it, a watch from "" that starts with the current state,
// the watch-list form (sendInitialEvents) that ends its initial state
// with a BOOKMARK annotated k8s.io/initial-events-end, timeoutSeconds,
// and the end of a watch at the pod's deletion.
func TestTheWatchFormsAClientUsesAreServedAsTheAPIServerServesThem(t *testing.T) {
	h := startService(t, nil)
	ip := podIP()
	p := h.createPod("wire", ip, podOpts{gateStarted: time.Now()})
	c := from(ip)
	base := h.url + "/api/v1/namespaces/default/pods?fieldSelector=metadata.name%3Dwire"

	code, body := do(t, c, http.MethodGet, base, "", "")
	var list corev1.PodList
	if err := json.Unmarshal(body, &list); err != nil || code != http.StatusOK {
		t.Fatalf("list: %d %s", code, body)
	}
	if len(list.Items) != 1 || list.Items[0].UID != p.UID || rvOf(list.ResourceVersion) < rvOf(p.ResourceVersion) {
		t.Fatalf("list %+v, want the one pod at a version at least %s", list.ListMeta, p.ResourceVersion)
	}

	fromList, _ := openWatch(t, c, base+"&watch=true&resourceVersion="+list.ResourceVersion)
	fromNow, _ := openWatch(t, c, base+"&watch=true")
	watchList, _ := openWatch(t, c, base+"&watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true")
	timed, _ := openWatch(t, c, base+"&watch=true&timeoutSeconds=1&resourceVersion="+list.ResourceVersion)

	if ev, _ := next(t, fromNow, "initial event"); ev.Type != watch.Added || ev.Object.UID != p.UID {
		t.Errorf("a watch from \"\" began with %s %s, want ADDED of the pod", ev.Type, ev.Object.Name)
	}
	if ev, _ := next(t, watchList, "initial event"); ev.Type != watch.Added || ev.Object.UID != p.UID {
		t.Errorf("a watch-list began with %s %s, want ADDED of the pod", ev.Type, ev.Object.Name)
	}
	if ev, _ := next(t, watchList, "bookmark"); ev.Type != watch.Bookmark || ev.Object.Annotations[metav1.InitialEventsAnnotationKey] != "true" ||
		rvOf(ev.Object.ResourceVersion) < rvOf(p.ResourceVersion) {
		t.Errorf("a watch-list's second event %s %+v, want BOOKMARK annotated %s", ev.Type, ev.Object.ObjectMeta, metav1.InitialEventsAnnotationKey)
	}
	start := time.Now()
	if _, open := next(t, timed, "end of the watch with timeoutSeconds=1"); open || time.Since(start) > 5*time.Second {
		t.Errorf("the watch with timeoutSeconds=1 sent an event or lasted %s", time.Since(start))
	}

	// A change: every watch gets it as MODIFIED, the one from the list's
	// version first of all (it had nothing to catch up).
	p.Status.ContainerStatuses[0].Ready = false
	p, err := h.admin.CoreV1().Pods("default").UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range map[string]<-chan rawEvent{"from the list": fromList, "from now": fromNow, "watch-list": watchList} {
		ev, _ := next(t, w, "the change")
		if ev.Type != watch.Modified || ev.Object.ResourceVersion != p.ResourceVersion || ev.Object.Status.ContainerStatuses[0].Ready {
			t.Errorf("watch %s: %s at %s, want MODIFIED at %s with app unready", name, ev.Type, ev.Object.ResourceVersion, p.ResourceVersion)
		}
	}

	// A watch from the latest version has nothing to send until the
	// deletion, which ends it.
	latest, _ := openWatch(t, c, base+"&watch=true&resourceVersion="+p.ResourceVersion)
	if err := h.admin.CoreV1().Pods("default").Delete(context.Background(), "wire", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	// The deletion may first set deletionTimestamp (MODIFIED).
	ev, _ := next(t, latest, "the deletion")
	for ev.Type == watch.Modified && ev.Object.DeletionTimestamp != nil {
		ev, _ = next(t, latest, "the deletion")
	}
	if ev.Type != watch.Deleted || ev.Object.UID != p.UID {
		t.Errorf("after the deletion: %s %s, want DELETED of the pod", ev.Type, ev.Object.Name)
	}
	if _, open := next(t, latest, "the end of the watch"); open {
		t.Error("the watch went on after its pod was deleted")
	}
}

// TestAWatchListWithoutItsRequiredParametersIsABadRequest: the API
// server's rule (sendInitialEvents needs resourceVersionMatch=NotOlderThan
// and bookmarks), so a client learns of its mistake here as there.
func TestAWatchListWithoutItsRequiredParametersIsABadRequest(t *testing.T) {
	h := startService(t, nil)
	ip := podIP()
	h.createPod("badwatch", ip, podOpts{})
	code, body := do(t, from(ip), http.MethodGet, h.url+"/api/v1/namespaces/default/pods?fieldSelector=metadata.name%3Dbadwatch&watch=true&sendInitialEvents=true", "", "")
	if st := status(t, body); code != http.StatusBadRequest || !strings.Contains(st.Message, "resourceVersionMatch=NotOlderThan") {
		t.Errorf("got %d %q, want 400 naming resourceVersionMatch=NotOlderThan", code, st.Message)
	}
}

// TestAGateMissesNothingWhileTheServiceRestarts stops the service under
// a watching gate (client-go's reflector through podapi), changes the
// pod while no service runs, and starts a new service on the same
// address: the gate's reflector comes back with the version it had, and
// the new service, whose informer knows only the latest state, sends it.
func TestAGateMissesNothingWhileTheServiceRestarts(t *testing.T) {
	first := startService(t, nil)
	ip := podIP()
	p := first.createPod("survivor", ip, podOpts{gateStarted: time.Now()})
	r := watchAsGate(t, first, "survivor", ip)
	eventually(t, "the gate sees its pod with app ready", func() bool {
		ps, ok := r.last()
		return ok && containerReady(ps, "app")
	})
	addr := strings.TrimPrefix(first.url, "http://")
	first.stop()

	p.Status.ContainerStatuses[0].Ready = false
	if _, err := first.admin.CoreV1().Pods("default").UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	second := startServiceOn(t, first.node, addr, nil)
	eventually(t, "the gate sees the change made while no service ran", func() bool {
		ps, ok := r.last()
		return ok && !containerReady(ps, "app")
	})
	if v := second.watches.Load(); v != 1 {
		t.Errorf("the new service sent %d watches to the API server, want 1", v)
	}
}
