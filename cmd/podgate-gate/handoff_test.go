package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/local/apiserver"
	"github.com/podgate/podgate/local/objstore"
	"github.com/podgate/podgate/test/queueenv"
	"github.com/podgate/podgate/test/testapp"
)

// TestTheGateBinaryHoldsRequestsWhileASidecarIsUnreadyAndHandsThemToTheActivator:
// the real gate binary as Knative's queue sidecar, its status source a
// real API (podgate run's control API over its store) holding the pod.
// While a sidecar is unready a request waits at the gate, the serving
// container gets nothing; once the pod's Ready condition is False the
// request goes to the activator (a loopback stand-in) with Knative's
// routing headers, and the activator's answer reaches the client.
func TestTheGateBinaryHoldsRequestsWhileASidecarIsUnreadyAndHandsThemToTheActivator(t *testing.T) {
	bin := gateBinary(t)
	st, apiURL := startControlAPI(t)
	app := startTestApp(t, "app")
	sidecar := startTestApp(t, "sidecar")
	var mu sync.Mutex
	var handed []http.Header
	act := startHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		handed = append(handed, r.Header.Clone())
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, "activator\n")
	}))

	appPort, sidePort := tcpPort(t, app.Addr()), tcpPort(t, sidecar.Addr())
	rev := queueenv.Revision{
		Namespace: "default", Service: "hello", Configuration: "hello", Revision: "hello-00001",
		Pod: "hello-00001-deployment-7d9c-x2x4q", UserPort: appPort, MultiContainerProbes: true,
		ReadinessProbe: fmt.Sprintf(`[{"tcpSocket":{"port":%d,"host":"127.0.0.1"},"periodSeconds":1},`+
			`{"httpGet":{"path":"/readyz","port":%d,"host":"127.0.0.1"},"periodSeconds":1,"failureThreshold":1}]`, appPort, sidePort),
	}
	running := func(name string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, Ready: true, ContainerID: "podgate://" + name,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	}
	if _, err := st.Pods.Create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: rev.Namespace, Name: rev.Pod},
		Status: corev1.PodStatus{
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{running("app"), running("sidecar"), running("queue-proxy")},
		},
	}); err != nil {
		t.Fatal(err)
	}
	g := startQueueGate(t, bin, rev, "PODGATE_READINESS_CONTAINERS=app,sidecar",
		"PODGATE_STATUS_SOURCE="+apiURL, "PODGATE_HANDOFF_URL="+act)
	g.waitReady(t)

	sidecar.SetReady(false)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	g.poll(t, "the gate is unready", func() (bool, string) {
		code, err := healthCheck(client, g.url+"/")
		return code == http.StatusServiceUnavailable, fmt.Sprintf("%d %v", code, err)
	})
	before := app.Traffic()
	type reply struct {
		code int
		body string
		err  error
	}
	res := make(chan reply, 1)
	go func() {
		resp, err := oneShot.Get(g.url + "/work")
		if err != nil {
			res <- reply{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		res <- reply{resp.StatusCode, string(b), err}
	}()
	g.poll(t, "the request is held", func() (bool, string) {
		v := metric(t, g.metricsURL, "podgate_readiness_held")
		return v == 1, fmt.Sprint(v)
	})
	if _, err := st.Pods.Modify(rev.Namespace, rev.Pod, func(p *corev1.Pod) error {
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == corev1.PodReady {
				p.Status.Conditions[i].Status = corev1.ConditionFalse
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var r reply
	select {
	case r = <-res:
	case <-time.After(30 * time.Second):
		t.Fatal("the held request was not answered after the pod turned not Ready")
	}
	if r.err != nil || r.code != http.StatusAccepted || r.body != "activator\n" {
		t.Fatalf("client got %d %q %v, want the activator's answer", r.code, r.body, r.err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(handed) != 1 {
		t.Fatalf("the activator got %d requests, want 1", len(handed))
	}
	h := handed[0]
	if h.Get("Knative-Serving-Namespace") != "default" || h.Get("Knative-Serving-Revision") != "hello-00001" ||
		h.Get("Podgate-Handoff") != rev.Pod+";n=1" {
		t.Errorf("handed-off headers %v lack Knative's routing headers or the marker", h)
	}
	if n := app.Traffic() - before; n != 0 {
		t.Errorf("the serving container got %d request(s) while the sidecar was unready", n)
	}
}

func TestTheGateBinaryRefusesAHandoffWithoutAStatusSource(t *testing.T) {
	bin := gateBinary(t)
	g := startQueueGate(t, bin, queueenv.Revision{}, "PODGATE_HANDOFF_URL=http://activator-service.knative-serving.svc.cluster.local:80")
	select {
	case <-g.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the gate kept running")
	}
	if g.exitErr == nil {
		t.Fatal("the gate exited 0")
	}
	if want := "PODGATE_HANDOFF_URL: is set, but PODGATE_STATUS_SOURCE is \"none\""; !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(g.stderr.String()) {
		t.Errorf("stderr %q does not say %q", g.stderr.String(), want)
	}
}

// startControlAPI runs podgate run's control API over a store on
// 127.0.0.1:0.
func startControlAPI(t *testing.T) (*objstore.Store, string) {
	t.Helper()
	st := objstore.New(objstore.Options{})
	ln, err := apiserver.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- apiserver.NewServer(apiserver.Config{Store: st}).Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("control API: %v", err)
		}
	})
	return st, "http://" + ln.Addr().String()
}

func startTestApp(t *testing.T, name string) *testapp.Server {
	t.Helper()
	s, err := testapp.Start(testapp.Config{Name: name}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return s
}

// startHTTP serves h on 127.0.0.1:0 until the test ends; its URL.
func startHTTP(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: time.Minute}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return "http://" + ln.Addr().String()
}

func tcpPort(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// metric reads one unlabelled series of a metrics page; -1 when absent
// or unreadable.
func metric(t *testing.T, url, name string) float64 {
	t.Helper()
	resp, err := oneShot.Get(url)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindSubmatch(b)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		return -1
	}
	return v
}

// oneShot keeps no connection open after a request.
var oneShot = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
