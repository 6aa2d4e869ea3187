package lab_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/lab"
	"github.com/podgate/podgate/local/apiserver"
	"github.com/podgate/podgate/local/objstore"
	"github.com/podgate/podgate/local/podctl"
	"github.com/podgate/podgate/local/servingv1"
)

// controlAPI is the real control API server over a store the test writes,
// on a loopback port, and a client for it.
func controlAPI(t *testing.T) (*objstore.Store, *podctl.Client) {
	t.Helper()
	store := objstore.New(objstore.Options{})
	srv := httptest.NewServer(apiserver.NewServer(apiserver.Config{Store: store}))
	t.Cleanup(srv.Close)
	c, err := podctl.NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return store, c
}

// podsOf lists the control API's pods, as lab.Local does.
type podsOf struct{ *podctl.Client }

func (c podsOf) ListPods(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
	return c.CoreV1().Pods("").List(ctx, opts)
}

// waitCtx bounds a wait that should end well within it on a loaded machine.
func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func shortCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	t.Cleanup(cancel)
	return ctx
}

func testPod(name string, ready bool, restarts int32, running bool) *corev1.Pod {
	cond := corev1.ConditionFalse
	if ready {
		cond = corev1.ConditionTrue
	}
	st := corev1.ContainerStatus{Name: "app", Ready: ready, RestartCount: restarts}
	if running {
		st.State.Running = &corev1.ContainerStateRunning{}
	} else {
		st.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Status: corev1.PodStatus{
			PodIP:             "127.0.79.9",
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: cond, Reason: "ContainersNotReady"}},
			ContainerStatuses: []corev1.ContainerStatus{st},
		},
	}
}

func TestWaitPod(t *testing.T) {
	store, c := controlAPI(t)
	for _, p := range []*corev1.Pod{testPod("a", false, 0, true), testPod("b", true, 2, true), testPod("c", false, 3, false)} {
		if _, err := store.Pods.Create(p); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		match   func(*corev1.Pod) error
		want    string // pod name, or "" for a timeout
		wantErr string
	}{
		{"a ready pod is found among others", lab.PodReady, "b", ""},
		{"a named pod that is not ready times out with its condition", lab.Named("a", lab.PodReady), "", "a: condition Ready=False ContainersNotReady"},
		{"a container ready flag", lab.ContainerReady("app", false), "a", ""},
		{"an unknown container says so", lab.ContainerReady("nope", true), "", "no status of container nope"},
		{"a restart above the count that runs again", lab.Named("b", lab.Restarted("app", 1)), "b", ""},
		{"a restart not above the count", lab.Named("b", lab.Restarted("app", 2)), "", "restartCount=2"},
		{"a restarted container still waiting is not restarted yet", lab.Named("c", lab.Restarted("app", 0)), "", "not running yet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := lab.WaitPod(shortCtx(t), podsOf{c}, tc.name, tc.match)
			if tc.want != "" {
				if err != nil || p == nil || p.Name != tc.want {
					t.Fatalf("WaitPod = %v, %v; want pod %s", p, err, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("err = %v, want a timeout saying %q", err, tc.wantErr)
			}
		})
	}
}

func TestWaitRestartSeesTheRestartHappen(t *testing.T) {
	store, c := controlAPI(t)
	if _, err := store.Pods.Create(testPod("a", true, 0, true)); err != nil {
		t.Fatal(err)
	}
	// The restart lands while WaitRestart polls.
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(3 * lab.PollInterval)
		if _, err := store.Pods.Update(testPod("a", true, 1, true)); err != nil {
			t.Error(err)
		}
	}()
	p, err := lab.WaitRestart(waitCtx(t), podsOf{c}, "a", "app", 0)
	<-done
	if err != nil || lab.ContainerStatus(p, "app").RestartCount != 1 {
		t.Fatalf("WaitRestart = %v, %v", p, err)
	}
}

func TestWaitPodGone(t *testing.T) {
	store, c := controlAPI(t)
	if _, err := store.Pods.Create(testPod("a", true, 0, true)); err != nil {
		t.Fatal(err)
	}
	if err := lab.WaitPodGone(shortCtx(t), podsOf{c}, "a"); err == nil || !strings.Contains(err.Error(), "still listed") {
		t.Errorf("err = %v, want a timeout saying the pod is still listed", err)
	}
	if _, err := store.Pods.Delete("default", "a"); err != nil {
		t.Fatal(err)
	}
	if err := lab.WaitPodGone(waitCtx(t), podsOf{c}, "a"); err != nil {
		t.Error(err)
	}
}

func TestWaitServiceCondition(t *testing.T) {
	store, c := controlAPI(t)
	svc := &servingv1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "runtime"},
		Status: servingv1.ServiceStatus{
			URL: "http://runtime.default.example.com",
			Conditions: []servingv1.Condition{
				{Type: "Ready", Status: corev1.ConditionUnknown, Reason: "NoHealthyBackends", Message: `Revision "runtime-00001" has no ready pod.`},
				{Type: "RoutesReady", Status: corev1.ConditionTrue},
			},
		},
	}
	if _, err := store.Services.Create(svc); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		ns      string
		want    []lab.ServiceCondition
		wantErr string
	}{
		{"status and reason match", "default", []lab.ServiceCondition{lab.ServiceReady(corev1.ConditionUnknown, "NoHealthyBackends")}, ""},
		{"an empty reason matches any", "default", []lab.ServiceCondition{lab.ServiceReady(corev1.ConditionUnknown, "")}, ""},
		{"every condition must hold at once", "default", []lab.ServiceCondition{lab.ServiceReady(corev1.ConditionUnknown, ""), {Type: "RoutesReady", Status: corev1.ConditionTrue}}, ""},
		{"another reason times out naming what was seen", "default", []lab.ServiceCondition{lab.ServiceReady(corev1.ConditionUnknown, "RevisionMissing")}, `reason "NoHealthyBackends"`},
		{"another status times out", "default", []lab.ServiceCondition{lab.ServiceReady(corev1.ConditionTrue, "")}, "Ready=Unknown"},
		{"a missing condition says so", "default", []lab.ServiceCondition{{Type: "ConfigurationsReady", Status: corev1.ConditionTrue}}, "no ConfigurationsReady condition"},
		{"another namespace has no such service", "shop", []lab.ServiceCondition{lab.ServiceReady(corev1.ConditionTrue, "")}, "no Knative Service shop/runtime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := lab.WaitServiceCondition(shortCtx(t), c, tc.ns, "runtime", tc.want...)
			if tc.wantErr == "" {
				if err != nil || got.Status.URL != "http://runtime.default.example.com" {
					t.Fatalf("WaitServiceCondition = %v, %v", got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want it to say %q", err, tc.wantErr)
			}
		})
	}
}

func TestPoll(t *testing.T) {
	t.Run("done at once needs no tick", func(t *testing.T) {
		calls := 0
		err := lab.Poll(shortCtx(t), time.Hour, "x", func(context.Context) (bool, error) { calls++; return true, nil })
		if err != nil || calls != 1 {
			t.Errorf("err %v after %d calls", err, calls)
		}
	})
	t.Run("a timeout names what and the last state, not the deadline's echo", func(t *testing.T) {
		err := lab.Poll(shortCtx(t), lab.PollInterval, "the thing", func(ctx context.Context) (bool, error) {
			if ctx.Err() != nil { // what a request made as ctx ends reports
				return false, ctx.Err()
			}
			return false, errors.New("state I")
		})
		if err == nil || !strings.Contains(err.Error(), "waiting for the thing") || !strings.Contains(err.Error(), "last seen: state I") {
			t.Errorf("err = %v", err)
		}
	})
}
