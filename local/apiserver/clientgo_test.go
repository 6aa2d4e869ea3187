package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/podgate/podgate/local/objstore"
)

// clientset is the real client-go typed clientset on the test server.
func (s *testServer) clientset(t *testing.T) (*kubernetes.Clientset, *rest.Config) {
	t.Helper()
	cfg := &rest.Config{Host: "http://" + s.addr}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// client-go shares transports per config; close their idle
		// connections so no reader goroutine outlives the test.
		if tr, ok := cs.CoreV1().RESTClient().(*rest.RESTClient); ok && tr.Client != nil {
			tr.Client.CloseIdleConnections()
		}
	})
	return cs, cfg
}

func boundPod(name string) *corev1.Pod {
	p := testPod("default", name, map[string]string{"app": name})
	p.Spec.NodeName = "node-1"
	return p
}

func TestClientGoTypedClientset(t *testing.T) {
	s := startServer(t, Config{Store: objstore.New(objstore.Options{})})
	cs, _ := s.clientset(t)
	pods := cs.CoreV1().Pods("default")
	ctx := t.Context()

	created, err := pods.Create(ctx, boundPod("web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.UID == "" || created.ResourceVersion == "" || created.Namespace != "default" {
		t.Fatalf("created pod lacks server fields: %+v", created.ObjectMeta)
	}
	if _, err := pods.Create(ctx, boundPod("web"), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second create: got %v, want 409 AlreadyExists", err)
	}
	if _, err := pods.Create(ctx, &corev1.Pod{}, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("create without a name: got %v, want 422 Invalid", err)
	}
	if _, err := pods.List(ctx, metav1.ListOptions{Continue: "token-never-issued"}); !apierrors.IsBadRequest(err) {
		t.Errorf("list with a foreign continue token: got %v, want 400 BadRequest", err)
	}
	if _, err := cs.CoreV1().Pods("other").Create(ctx, boundPod("web"), metav1.CreateOptions{}); !apierrors.IsBadRequest(err) {
		t.Errorf("create in a namespace other than the object's: got %v, want 400 BadRequest", err)
	}
	if _, err := pods.Get(ctx, "nope", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get missing: got %v, want 404 NotFound", err)
	}
	if _, err := pods.Create(ctx, boundPod("other"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("list with a field selector on one pod carries the list's resourceVersion", func(t *testing.T) {
		list, err := pods.List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "web").String(), Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 1 || list.Items[0].Name != "web" || list.ResourceVersion == "" || list.Continue != "" {
			t.Fatalf("list = %d items, rv %q, continue %q", len(list.Items), list.ResourceVersion, list.Continue)
		}
		list, err = cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node-1", LabelSelector: "app=other"})
		if err != nil || names(list.Items) != "other" {
			t.Fatalf("list by node and label = %v, %v", list, err)
		}
	})

	t.Run("update keeps the status and refuses a stale resourceVersion", func(t *testing.T) {
		p, _ := pods.Get(ctx, "web", metav1.GetOptions{})
		p.Labels["tier"] = "front"
		p.Status.Phase = corev1.PodRunning // not changed by a PUT of the pod
		updated, err := pods.Update(ctx, p, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if updated.Labels["tier"] != "front" || updated.Status.Phase != "" || updated.ResourceVersion == p.ResourceVersion {
			t.Fatalf("updated = labels %v phase %q rv %s", updated.Labels, updated.Status.Phase, updated.ResourceVersion)
		}
		if _, err := pods.Update(ctx, p, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
			t.Fatalf("stale update: got %v, want 409 Conflict", err)
		}
	})

	t.Run("updateStatus changes only the status", func(t *testing.T) {
		p, _ := pods.Get(ctx, "web", metav1.GetOptions{})
		p.Status.Phase = corev1.PodRunning
		p.Labels["ignored"] = "yes"
		out, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if out.Status.Phase != corev1.PodRunning || out.Labels["ignored"] != "" {
			t.Fatalf("phase %q labels %v", out.Status.Phase, out.Labels)
		}
	})

	t.Run("strategic merge and JSON merge patches of the status", func(t *testing.T) {
		sm := `{"status":{"podIP":"127.0.1.9","conditions":[{"type":"Ready","status":"True"}]}}`
		out, err := pods.Patch(ctx, "web", types.StrategicMergePatchType, []byte(sm), metav1.PatchOptions{}, "status")
		if err != nil {
			t.Fatal(err)
		}
		if out.Status.PodIP != "127.0.1.9" || out.Status.Phase != corev1.PodRunning || len(out.Status.Conditions) != 1 {
			t.Fatalf("after strategic patch: %+v", out.Status)
		}
		out, err = pods.Patch(ctx, "web", types.MergePatchType, []byte(`{"status":{"podIP":null},"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{}, "status")
		if err != nil {
			t.Fatal(err)
		}
		if out.Status.PodIP != "" || out.Labels["x"] != "" {
			t.Fatalf("after merge patch: podIP %q labels %v", out.Status.PodIP, out.Labels)
		}
		out, err = pods.Patch(ctx, "web", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
		if err != nil || out.Labels["x"] != "y" {
			t.Fatalf("merge patch of the pod: %v, labels %v", err, out.Labels)
		}
		_, err = pods.Patch(ctx, "web", types.JSONPatchType, []byte(`[]`), metav1.PatchOptions{})
		if !apierrors.IsUnsupportedMediaType(err) {
			t.Fatalf("JSON patch: got %v, want 415", err)
		}
	})

	t.Run("watch from a resourceVersion sees later changes", func(t *testing.T) {
		list, err := pods.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if _, err := pods.Patch(ctx, "other", types.MergePatchType, []byte(`{"metadata":{"labels":{"n":"1"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-w.ResultChan():
			if p, ok := ev.Object.(*corev1.Pod); ev.Type != watch.Modified || !ok || p.Name != "other" {
				t.Fatalf("got %s %T", ev.Type, ev.Object)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no watch event")
		}
	})

	t.Run("events are created through the core/v1 events API", func(t *testing.T) {
		ev, err := cs.CoreV1().Events("default").Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{GenerateName: "web."},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"},
			Reason:         "Started", Type: corev1.EventTypeNormal,
		}, metav1.CreateOptions{})
		if err != nil || !strings.HasPrefix(ev.Name, "web.") {
			t.Fatalf("create event: %v %v", ev, err)
		}
		list, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web"})
		if err != nil || len(list.Items) != 1 {
			t.Fatalf("events: %v %v", list, err)
		}
	})

	t.Run("delete of a bound pod sets deletionTimestamp, grace period 0 removes it", func(t *testing.T) {
		grace := int64(12)
		if err := pods.Delete(ctx, "web", metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
			t.Fatal(err)
		}
		p, err := pods.Get(ctx, "web", metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp == nil || *p.DeletionGracePeriodSeconds != 12 {
			t.Fatalf("after delete: %v %+v", err, p)
		}
		zero := int64(0)
		if err := pods.Delete(ctx, "web", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		if _, err := pods.Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("after delete with grace 0: %v", err)
		}
	})
}

func TestClientGoDiscovery(t *testing.T) {
	s := startServer(t, Config{Store: objstore.New(objstore.Options{})})
	_, cfg := s.clientset(t)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	groups, lists, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range groups {
		got = append(got, g.Name)
	}
	if fmt.Sprint(got) != "[ discovery.k8s.io serving.knative.dev]" {
		t.Errorf("groups = %q", got)
	}
	want := map[string]string{"v1": "events,pods,pods/log,pods/status", "discovery.k8s.io/v1": "endpointslices", "serving.knative.dev/v1": "services"}
	for _, l := range lists {
		var rs []string
		for _, r := range l.APIResources {
			rs = append(rs, r.Name)
		}
		if want[l.GroupVersion] != strings.Join(rs, ",") {
			t.Errorf("%s: resources %v, want %s", l.GroupVersion, rs, want[l.GroupVersion])
		}
		delete(want, l.GroupVersion)
	}
	if len(want) != 0 {
		t.Errorf("missing group versions %v", want)
	}
	v, err := dc.ServerVersion()
	if err != nil || v.GitVersion == "" {
		t.Errorf("version %v %v", v, err)
	}
}

func TestProtobufOnlyAcceptIsNotAcceptable(t *testing.T) {
	s := startServer(t, Config{Store: objstore.New(objstore.Options{})})
	req, _ := http.NewRequest(http.MethodGet, "http://"+s.addr+"/api/v1/pods", nil)
	req.Header.Set("Accept", "application/vnd.kubernetes.protobuf")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	if resp.StatusCode != http.StatusNotAcceptable {
		t.Errorf("status %d, want 406", resp.StatusCode)
	}
}

// podNames is an informer's view of the pods, for assertions.
func podNames(inf cache.SharedIndexInformer) string {
	var out []string
	for _, o := range inf.GetStore().List() {
		p := o.(*corev1.Pod)
		out = append(out, p.Name+"="+p.Labels["v"])
	}
	return strings.Join(sortedStrings(out), ",")
}

func sortedStrings(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestClientGoInformer runs client-go's informer (by watch-list, the
// default, and by list and watch) against the API,
// on one pod by field selector, through a compaction that ends its watch
// with 410 Expired: it must relist and keep the right state.
func TestClientGoInformer(t *testing.T) {
	for _, watchList := range []bool{true, false} {
		t.Run(fmt.Sprintf("WatchListClient=%v", watchList), func(t *testing.T) {
			clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, watchList)
			testInformer(t)
		})
	}
}

func testInformer(t *testing.T) {
	store := objstore.New(objstore.Options{})
	s := startServer(t, Config{Store: store, BookmarkInterval: 50 * time.Millisecond})
	cs, _ := s.clientset(t)
	ctx, cancel := context.WithCancel(t.Context())
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("default"),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", "web").String()
		}))
	inf := factory.Core().V1().Pods().Informer()
	var mu sync.Mutex
	var seen []string
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { mu.Lock(); seen = append(seen, "add "+o.(*corev1.Pod).Name); mu.Unlock() },
	}); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); factory.Shutdown() }()

	mustCreateStore := func(name, v string) {
		p := boundPod(name)
		p.Labels["v"] = v
		if _, err := store.Pods.Put(p); err != nil {
			t.Fatal(err)
		}
	}
	mustCreateStore("web", "1")
	mustCreateStore("noise", "1")
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer never synced")
	}
	if got := podNames(inf); got != "web=1" {
		t.Fatalf("after sync: %s", got)
	}
	mustCreateStore("web", "2")
	eventually(t, "the update", func() bool { return podNames(inf) == "web=2" })

	// Bookmarks move the informer's version on while its pod is quiet.
	mustCreateStore("noise", "2")
	eventually(t, "a bookmark past the noise", func() bool { return inf.LastSyncResourceVersion() == store.ResourceVersion() })

	// The history is compacted: the watch ends with 410, the informer
	// relists; a change made meanwhile is not lost.
	store.Compact()
	mustCreateStore("web", "3")
	eventually(t, "the relist after 410", func() bool { return podNames(inf) == "web=3" })
	if _, _, err := store.DeletePod("default", "web", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deletion", func() bool { return podNames(inf) == "" })
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != "add web" {
		t.Errorf("handler saw %v, want one add of web", seen)
	}
}
