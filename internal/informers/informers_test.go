package informers

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/podgate/podgate/local/apiserver"
	"github.com/podgate/podgate/local/objstore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// startAPI serves store through a real control API on 127.0.0.1:0 and
// returns a real client-go clientset on it.
func startAPI(t *testing.T, store *objstore.Store) kubernetes.Interface {
	t.Helper()
	ln, err := apiserver.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- apiserver.NewServer(apiserver.Config{Store: store}).Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("control API: %v", err)
		}
	})
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: "http://" + ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func putPod(t *testing.T, store *objstore.Store, name string) {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	if _, err := store.Pods.Put(p); err != nil {
		t.Fatal(err)
	}
}

func podInformer(cs kubernetes.Interface) cache.SharedIndexInformer {
	return coreinformers.NewPodInformer(cs, "default", 0, cache.Indexers{})
}

// TestStartedRingsForChangesOnceTheCachesSynced: Start returns with the
// stores filled; an event rings; Take clears a ring not yet received, so
// the look after it starts from silence.
func TestStartedRingsForChangesOnceTheCachesSynced(t *testing.T) {
	store := objstore.New(objstore.Options{})
	putPod(t, store, "before")
	inf := podInformer(startAPI(t, store))
	s, err := Start(context.Background(), inf)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if _, ok, _ := inf.GetStore().GetByKey("default/before"); !ok {
		t.Fatal("Start returned before the store held the pod that was there")
	}
	s.Take() // the initial list's ring

	putPod(t, store, "after")
	select {
	case <-s.Changed():
	case <-time.After(30 * time.Second):
		t.Fatal("no ring after a pod was added")
	}
	if _, ok, _ := inf.GetStore().GetByKey("default/after"); !ok {
		t.Error("rang before the store held the new pod")
	}
	s.Take()
	select {
	case <-s.Changed():
		t.Error("a ring is pending after Take with nothing new")
	default:
	}
}

// TestStartEndsWithItsContext: when ctx ends before the caches sync,
// Start returns ctx.Err() and leaves nothing running (goleak checks).
func TestStartEndsWithItsContext(t *testing.T) {
	store := objstore.New(objstore.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Start(ctx, podInformer(startAPI(t, store))); !errors.Is(err, context.Canceled) {
		t.Fatalf("Start with an ended context: %v, want context.Canceled", err)
	}
}
