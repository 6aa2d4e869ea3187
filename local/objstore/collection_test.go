package objstore

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/local/servingv1"
)

func TestCreateStampsWhatTheServerOwns(t *testing.T) {
	s := newTestStore(Options{})
	in := pod("default", "web")
	out := mustCreate(t, s, in)

	if out.ResourceVersion != "1" {
		t.Errorf("resourceVersion = %q, want 1", out.ResourceVersion)
	}
	if len(out.UID) != 36 || out.UID[14] != '4' {
		t.Errorf("uid = %q, want a version-4 UUID", out.UID)
	}
	if !out.CreationTimestamp.Time.Equal(epoch) {
		t.Errorf("creationTimestamp = %v, want %v (whole seconds)", out.CreationTimestamp, epoch)
	}
	if out.APIVersion != "v1" || out.Kind != "Pod" {
		t.Errorf("apiVersion/kind = %q/%q, want v1/Pod", out.APIVersion, out.Kind)
	}
	if in.ResourceVersion != "" || in.UID != "" || in.Kind != "" {
		t.Errorf("the caller's object was changed: %+v", in.ObjectMeta)
	}
}

func TestCreateKeepsAGivenCreationTimestamp(t *testing.T) {
	s := newTestStore(Options{})
	p := pod("default", "old")
	p.CreationTimestamp = metav1.NewTime(epoch.Add(-3600e9))
	out := mustCreate(t, s, p)
	if !out.CreationTimestamp.Equal(&p.CreationTimestamp) {
		t.Errorf("creationTimestamp = %v, want the given %v", out.CreationTimestamp, p.CreationTimestamp)
	}
}

func TestCopiesIsolateTheStoreFromCallers(t *testing.T) {
	s := newTestStore(Options{})
	in := pod("default", "web")
	out := mustCreate(t, s, in)

	in.Labels["app"] = "changed-input"
	out.Labels["app"] = "changed-output"
	out.Spec.Containers[0].Name = "changed-output"

	got, err := s.Pods.Get("default", "web")
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["app"] != "web" || got.Spec.Containers[0].Name != "app" {
		t.Errorf("stored object changed through a caller's copy: labels %v, container %q", got.Labels, got.Spec.Containers[0].Name)
	}
	got.Labels["app"] = "changed-get"
	list, _ := s.Pods.List("")
	if list[0].Labels["app"] != "web" {
		t.Errorf("stored object changed through Get's copy: %v", list[0].Labels)
	}
}

func TestWriteErrorsAreTheAPIServersStatusErrors(t *testing.T) {
	s := newTestStore(Options{})
	mustCreate(t, s, pod("default", "web"))
	stale := pod("default", "web")
	stale.ResourceVersion = "999"
	var nilPod *corev1.Pod

	tests := []struct {
		name    string
		err     error
		is      func(error) bool
		message string
	}{
		{"create of an existing name is AlreadyExists", second(s.Pods.Create(pod("default", "web"))),
			apierrors.IsAlreadyExists, `pods "web" already exists`},
		{"create without a name is Invalid naming metadata.name", second(s.Pods.Create(pod("default", ""))),
			apierrors.IsInvalid, `metadata.name: Required value: name or generateName is required`},
		{"create without a namespace is Invalid naming metadata.namespace", second(s.Pods.Create(pod("", "x"))),
			apierrors.IsInvalid, `metadata.namespace: Required value`},
		{"update without a name is Invalid", second(s.Pods.Update(pod("default", ""))),
			apierrors.IsInvalid, `metadata.name: Required value: name is required`},
		{"a nil object is a BadRequest", second(s.Pods.Create(nilPod)),
			apierrors.IsBadRequest, `pods: nil object`},
		{"get of a missing name is NotFound", second(s.Pods.Get("default", "nope")),
			apierrors.IsNotFound, `pods "nope" not found`},
		{"get in another namespace is NotFound", second(s.Pods.Get("other", "web")),
			apierrors.IsNotFound, `pods "web" not found`},
		{"update of a missing name is NotFound", second(s.Pods.Update(pod("default", "nope"))),
			apierrors.IsNotFound, `pods "nope" not found`},
		{"update with a stale resourceVersion is Conflict", second(s.Pods.Update(stale)),
			apierrors.IsConflict, `Operation cannot be fulfilled on pods "web": the object has been modified`},
		{"delete of a missing name is NotFound", second(s.Pods.Delete("default", "nope")),
			apierrors.IsNotFound, `pods "nope" not found`},
		{"modify of a missing name is NotFound", second(s.Pods.Modify("default", "nope", func(*corev1.Pod) error { return nil })),
			apierrors.IsNotFound, `pods "nope" not found`},
		{"endpointslices are named with their group", second(s.EndpointSlices.Get("default", "nope")),
			apierrors.IsNotFound, `endpointslices.discovery.k8s.io "nope" not found`},
		{"knative services are named with their group", second(s.Services.Get("default", "nope")),
			apierrors.IsNotFound, `services.serving.knative.dev "nope" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == nil || !tt.is(tt.err) {
				t.Fatalf("err = %v (%T)", tt.err, tt.err)
			}
			if !strings.Contains(tt.err.Error(), tt.message) {
				t.Errorf("err = %q, want it to contain %q", tt.err, tt.message)
			}
		})
	}
}

func second[T any](_ T, err error) error { return err }

func TestGenerateNameAddsFiveCharacters(t *testing.T) {
	s := newTestStore(Options{})
	p := pod("default", "")
	p.GenerateName = "web-"
	a, err := s.Pods.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Pods.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range []string{a.Name, b.Name} {
		if !strings.HasPrefix(got, "web-") || len(got) != len("web-")+5 || strings.ContainsAny(got[4:], "aeiou01") {
			t.Errorf("generated name %q: want web- and five of the API server's characters", got)
		}
	}
	if a.Name == b.Name {
		t.Errorf("two creates got the same name %q", a.Name)
	}
}

func TestUpdateRules(t *testing.T) {
	tests := []struct {
		name   string
		update func(s *Store, created *corev1.Pod) (*corev1.Pod, error)
		wantRV string
		check  func(t *testing.T, created, updated *corev1.Pod)
	}{
		{"matching resourceVersion updates", func(s *Store, c *corev1.Pod) (*corev1.Pod, error) {
			c.Labels["tier"] = "front"
			return s.Pods.Update(c)
		}, "2", nil},
		{"empty resourceVersion updates unconditionally", func(s *Store, c *corev1.Pod) (*corev1.Pod, error) {
			c.ResourceVersion = ""
			c.Labels["tier"] = "front"
			return s.Pods.Update(c)
		}, "2", nil},
		{"an update that changes nothing keeps the version", func(s *Store, c *corev1.Pod) (*corev1.Pod, error) {
			return s.Pods.Update(c)
		}, "1", nil},
		{"uid and creationTimestamp stay the server's", func(s *Store, c *corev1.Pod) (*corev1.Pod, error) {
			c.UID = "forged"
			c.CreationTimestamp = metav1.NewTime(epoch.Add(-1e12))
			c.Status.Phase = corev1.PodRunning
			return s.Pods.Update(c)
		}, "2", func(t *testing.T, created, updated *corev1.Pod) {
			if updated.UID != created.UID || !updated.CreationTimestamp.Equal(&created.CreationTimestamp) {
				t.Errorf("uid/creationTimestamp = %q/%v, want %q/%v", updated.UID, updated.CreationTimestamp, created.UID, created.CreationTimestamp)
			}
		}},
		{"put updates an existing object unconditionally", func(s *Store, c *corev1.Pod) (*corev1.Pod, error) {
			c.ResourceVersion = "12345"
			c.Status.Phase = corev1.PodRunning
			return s.Pods.Put(c)
		}, "2", nil},
		{"modify applies the change to the stored state", func(s *Store, c *corev1.Pod) (*corev1.Pod, error) {
			return s.Pods.Modify(c.Namespace, c.Name, func(p *corev1.Pod) error {
				p.Status.Phase = corev1.PodRunning
				return nil
			})
		}, "2", func(t *testing.T, _, updated *corev1.Pod) {
			if updated.Status.Phase != corev1.PodRunning {
				t.Errorf("phase = %q", updated.Status.Phase)
			}
		}},
		{"modify that errors changes nothing", func(s *Store, c *corev1.Pod) (*corev1.Pod, error) {
			_, err := s.Pods.Modify(c.Namespace, c.Name, func(p *corev1.Pod) error {
				p.Status.Phase = corev1.PodFailed
				return fmt.Errorf("changed my mind")
			})
			if err == nil || err.Error() != "changed my mind" {
				return nil, fmt.Errorf("modify error = %v", err)
			}
			return s.Pods.Get(c.Namespace, c.Name)
		}, "1", func(t *testing.T, _, updated *corev1.Pod) {
			if updated.Status.Phase != "" {
				t.Errorf("phase = %q, want unchanged", updated.Status.Phase)
			}
		}},
		{"modify may not rename", func(s *Store, c *corev1.Pod) (*corev1.Pod, error) {
			_, err := s.Pods.Modify(c.Namespace, c.Name, func(p *corev1.Pod) error {
				p.Name = "other"
				return nil
			})
			if !apierrors.IsBadRequest(err) {
				return nil, fmt.Errorf("modify rename error = %v, want BadRequest", err)
			}
			return s.Pods.Get(c.Namespace, c.Name)
		}, "1", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestStore(Options{})
			created := mustCreate(t, s, pod("default", "web"))
			updated, err := tt.update(s, created.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			if updated.ResourceVersion != tt.wantRV {
				t.Errorf("resourceVersion = %q, want %q", updated.ResourceVersion, tt.wantRV)
			}
			if _, rv := s.Pods.List(""); rv != tt.wantRV {
				t.Errorf("list resourceVersion = %q, want %q", rv, tt.wantRV)
			}
			if tt.check != nil {
				tt.check(t, created, updated)
			}
		})
	}
}

func TestPutCreatesWhenAbsent(t *testing.T) {
	s := newTestStore(Options{})
	out, err := s.Pods.Put(pod("default", "web"))
	if err != nil {
		t.Fatal(err)
	}
	if out.ResourceVersion != "1" || out.UID == "" {
		t.Errorf("put of a new object: rv %q uid %q, want a created object", out.ResourceVersion, out.UID)
	}
}

func TestDeleteReturnsTheLastStateAtTheDeletionsVersion(t *testing.T) {
	s := newTestStore(Options{})
	mustCreate(t, s, pod("default", "web"))
	gone, err := s.Pods.Delete("default", "web")
	if err != nil {
		t.Fatal(err)
	}
	if gone.ResourceVersion != "2" || gone.Name != "web" || gone.Labels["app"] != "web" {
		t.Errorf("deleted object: rv %q name %q labels %v", gone.ResourceVersion, gone.Name, gone.Labels)
	}
	if _, err := s.Pods.Get("default", "web"); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: %v, want NotFound", err)
	}
}

func TestListIsSortedAndFilteredByNamespace(t *testing.T) {
	s := newTestStore(Options{})
	for _, k := range [][2]string{{"prod", "b"}, {"default", "z"}, {"prod", "a"}, {"default", "c"}} {
		mustCreate(t, s, pod(k[0], k[1]))
	}
	names := func(ps []*corev1.Pod) string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Namespace+"/"+p.Name)
		}
		return strings.Join(out, " ")
	}
	all, rv := s.Pods.List("")
	if got := names(all); got != "default/c default/z prod/a prod/b" {
		t.Errorf("list all = %s", got)
	}
	if rv != "4" {
		t.Errorf("list rv = %q, want 4", rv)
	}
	prod, _ := s.Pods.List("prod")
	if got := names(prod); got != "prod/a prod/b" {
		t.Errorf("list prod = %s", got)
	}
	none, _ := s.Pods.List("nowhere")
	if none == nil || len(none) != 0 {
		t.Errorf("list of an empty namespace = %#v, want an empty non-nil slice", none)
	}
}

func TestVersionsGrowAcrossCollections(t *testing.T) {
	s := newTestStore(Options{})
	p := mustCreate(t, s, pod("default", "web"))
	ev, err := s.Events.Create(&corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web.1"}})
	if err != nil {
		t.Fatal(err)
	}
	sl, err := s.EndpointSlices.Create(&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-abc"}, AddressType: discoveryv1.AddressTypeIPv4})
	if err != nil {
		t.Fatal(err)
	}
	ks, err := s.Services.Create(&servingv1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hello"}})
	if err != nil {
		t.Fatal(err)
	}
	got := []string{p.ResourceVersion, ev.ResourceVersion, sl.ResourceVersion, ks.ResourceVersion, s.ResourceVersion()}
	if strings.Join(got, ",") != "1,2,3,4,4" {
		t.Errorf("versions = %v, want 1,2,3,4 and store at 4", got)
	}
	if sl.APIVersion != "discovery.k8s.io/v1" || sl.Kind != "EndpointSlice" || ks.APIVersion != "serving.knative.dev/v1" || ks.Kind != "Service" {
		t.Errorf("kinds: %s %s, %s %s", sl.APIVersion, sl.Kind, ks.APIVersion, ks.Kind)
	}
}

func TestConcurrentModifiesLoseNothing(t *testing.T) {
	s := newTestStore(Options{})
	mustCreate(t, s, pod("default", "web"))
	const writers, each = 8, 50
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range each {
				_, err := s.Pods.Modify("default", "web", func(p *corev1.Pod) error {
					n, _ := strconv.Atoi(p.Annotations["count"])
					if p.Annotations == nil {
						p.Annotations = map[string]string{}
					}
					p.Annotations["count"] = strconv.Itoa(n + 1)
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	got, _ := s.Pods.Get("default", "web")
	if got.Annotations["count"] != strconv.Itoa(writers*each) {
		t.Errorf("count = %s, want %d", got.Annotations["count"], writers*each)
	}
	if got.ResourceVersion != strconv.Itoa(1+writers*each) {
		t.Errorf("resourceVersion = %s, want %d", got.ResourceVersion, 1+writers*each)
	}
}
