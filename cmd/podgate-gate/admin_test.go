package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/test/freeport"
	"github.com/podgate/podgate/test/queueenv"
)

// podAddr is a loopback address for a test's pod, as `podgate run` gives
// every pod its own 127.0.1.N (here a range no other test uses), and a
// free port on it.
func podAddr(t *testing.T, n int) string {
	t.Helper()
	ip := fmt.Sprintf("127.0.%d.%d", 200+n, 10+time.Now().Nanosecond()%200)
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatalf("%s: %v", ip, err)
	}
	_ = ln.Close()
	return ip
}

// freePortOn is a port nobody listens on right now at ip.
func freePortOn(t *testing.T, ip string) int { return freeport.Port(t, ip) }

// client dials from src (the kernel's choice, 127.0.0.1, when empty).
func client(src string) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second}
	if src != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(src)}
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

// call sends one request and returns "CODE BODY".
func call(t *testing.T, c *http.Client, method, url string, header http.Header) string {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		return "error: " + err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return strconv.Itoa(resp.StatusCode) + " " + string(b)
}

// health is a Knative health check (the kubelet's, from the node's
// address) of the gate.
func (g *queueGate) health(t *testing.T) string {
	t.Helper()
	return call(t, client(""), http.MethodGet, g.url+"/", http.Header{
		"User-Agent": {"kube-probe/1.37"}, contract.NetworkProbeHeader: {contract.NetworkProbeQueue},
	})
}

func (g *queueGate) adminURL(path string) string {
	return "http://" + hostPort(g.rev.PodIP, g.adminPort) + path
}

// startPodGate starts the gate for a pod at podIP whose serving container
// listens on 127.0.0.1:userPort, where Knative's default readiness probe
// looks.
func startPodGate(t *testing.T, bin, podIP string, userPort int, extra ...string) *queueGate {
	t.Helper()
	return startQueueGate(t, bin, queueenv.Revision{Pod: "hello-00001-deployment-abc", PodIP: podIP, UserPort: userPort}, extra...)
}

// serveApp serves 200 on 127.0.0.1:port (0: a free one) until stop.
func serveApp(t *testing.T, port int) (int, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "app\n") })}
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(ln) }()
	var once sync.Once
	stop := func() { once.Do(func() { _ = srv.Close(); <-served }) }
	t.Cleanup(stop)
	return ln.Addr().(*net.TCPAddr).Port, stop
}

// TestOnlyThePodChangesItsGatesState: the admin port listens on the pod
// IP, where every pod (and, on a cluster, the node) reaches it. Calls that
// change the gate's state from another address change nothing; from the
// pod's own address, or with the pod's admin token (the kubelet's hooks),
// they work. Read-only endpoints answer everyone.
func TestOnlyThePodChangesItsGatesState(t *testing.T) {
	bin := gateBinary(t)
	const token = "0123456789abcdef0123456789abcdef"

	t.Run("with an admin token", func(t *testing.T) {
		podIP := podAddr(t, 0)
		other := podAddr(t, 1) // another pod's address
		userPort, _ := serveApp(t, 0)
		g := startPodGate(t, bin, podIP, userPort, "PODGATE_ADMIN_TOKEN="+token, "PODGATE_ONLY_ROUTER=activator",
			"PODGATE_DRAIN_QUIET_PERIOD=30s")
		g.waitFor(t, "the gate is ready", func() bool { return g.health(t) == "200 queue" })

		for _, src := range []string{other, ""} { // another pod, and the host's 127.0.0.1 (the default source)
			c := client(src)
			for _, tc := range []struct{ method, path string }{
				{http.MethodGet, contract.StartDrainPath},
				{http.MethodPost, contract.UnroutedPath + "?pod=hello-00001-deployment-abc"},
				{http.MethodGet, contract.DrainPath},
			} {
				got := call(t, c, tc.method, g.adminURL(tc.path), http.Header{contract.AdminTokenHeader: {"wrong"}})
				if got[:4] != "403 " {
					t.Errorf("%s %s from %q: %q, want 403", tc.method, tc.path, src, got)
				}
				if h := g.health(t); h != "200 queue" {
					t.Fatalf("health check after %s %s from %q: %q, want 200 queue: the call changed the gate's state", tc.method, tc.path, src, h)
				}
			}
			if got := call(t, c, http.MethodGet, g.adminURL("/readyz"), nil); got != "200 ok\n" {
				t.Errorf("/readyz from %q: %q, want 200 ok (read-only, the kubelet's)", src, got)
			}
		}
		// Still nothing after queue-proxy's one second.
		time.Sleep(1200 * time.Millisecond)
		if h := g.health(t); h != "200 queue" {
			t.Fatalf("health check 1.2 s after the strangers' calls: %q", h)
		}

		// The kubelet's preStop hook of one container (node address, the
		// token): a container restart, not ready for a second, then back.
		start := time.Now()
		got := call(t, client(other), http.MethodGet, g.adminURL(contract.DrainPath), http.Header{contract.AdminTokenHeader: {token}})
		if got != "200 released: the gate is not terminating\n" || time.Since(start) < 900*time.Millisecond {
			t.Errorf("/wait-for-drain with the token: %q after %s, want released after 1 s", got, time.Since(start))
		}
		g.waitFor(t, "ready again after the released hook", func() bool { return g.health(t) == "200 queue" })

		// The gate's own hook from the pod's own address (the pod itself)
		// together with a container's (the token): the pod's deletion.
		hook := make(chan string, 1)
		go func() {
			hook <- call(t, client(other), http.MethodGet, g.adminURL(contract.DrainPath), http.Header{contract.AdminTokenHeader: {token}})
		}()
		if got := call(t, client(podIP), http.MethodGet, g.adminURL(contract.StartDrainPath), nil); got != "200 draining\n" {
			t.Fatalf("/start-drain from the pod's own address: %q", got)
		}
		if h := g.health(t); h != "503 shutting down\n" {
			t.Errorf("health check while draining: %q", h)
		}
		// The only router's confirmation from the pod's address ends it.
		if got := call(t, client(podIP), http.MethodPost, g.adminURL(contract.UnroutedPath+"?pod=hello-00001-deployment-abc"), nil); got != "200 ok\n" {
			t.Errorf("/unrouted from the pod's own address: %q", got)
		}
		select {
		case got := <-hook:
			if got != "200 drained\n" {
				t.Errorf("the container's hook: %q, want 200 drained", got)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("the drain did not end on the confirmation\n%s", g.stderr.String())
		}
		if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-g.exited:
			if g.exitErr != nil {
				t.Errorf("exit after SIGTERM: %v\n%s", g.exitErr, g.stderr.String())
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("no exit after SIGTERM\n%s", g.stderr.String())
		}
	})

	t.Run("without a token, as queue-proxy's pod spec", func(t *testing.T) {
		podIP := podAddr(t, 2)
		userPort, _ := serveApp(t, 0)
		g := startPodGate(t, bin, podIP, userPort)
		g.waitFor(t, "the gate is ready", func() bool { return g.health(t) == "200 queue" })
		// Knative's own preStop hook carries no token: served as
		// queue-proxy serves it (released after a second), but a
		// stranger's call cannot be told from it, so it changes nothing.
		res := make(chan string, 1)
		go func() { res <- call(t, client(""), http.MethodGet, g.adminURL(contract.DrainPath), nil) }()
		deadline := time.Now().Add(900 * time.Millisecond)
		for time.Now().Before(deadline) {
			if h := g.health(t); h != "200 queue" {
				t.Fatalf("health check during a stranger's /wait-for-drain: %q", h)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if got := <-res; got != "200 released: the gate is not terminating\n" {
			t.Errorf("/wait-for-drain without a token: %q", got)
		}
		if got := call(t, client(""), http.MethodGet, g.adminURL(contract.StartDrainPath), nil); got[:4] != "403 " {
			t.Errorf("/start-drain from another address without a token: %q, want 403", got)
		}
		if h := g.health(t); h != "200 queue" {
			t.Errorf("health check after: %q", h)
		}
	})
}

// TestAHealthCheckSeesTheServingPortClosedAtOnce: with Knative's default
// readiness probe (TCP on the user port, periodSeconds 0), after the pod
// was ready, a health check 400 ms after the serving container closed its
// port answers 503, as queue-proxy's probe on each check does (the
// gate's worker alone would tick only every second with a failure
// threshold of 3). When the port opens again, checks answer 200.
func TestAHealthCheckSeesTheServingPortClosedAtOnce(t *testing.T) {
	bin := gateBinary(t)
	podIP := podAddr(t, 3)
	userPort, stop := serveApp(t, 0)
	g := startPodGate(t, bin, podIP, userPort)
	g.waitFor(t, "the gate is ready", func() bool { return g.health(t) == "200 queue" })
	time.Sleep(1500 * time.Millisecond) // past the aggressive start: the worker ticks every second now
	if h := g.health(t); h != "200 queue" {
		t.Fatalf("health check of the ready pod: %q", h)
	}
	stop()
	time.Sleep(400 * time.Millisecond)
	if h := g.health(t); h != "503 " {
		t.Errorf("health check 400 ms after the serving port closed: %q, want 503", h)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(userPort)))
		if err == nil {
			_ = ln.Close()
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the user port stays taken: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	serveApp(t, userPort)
	g.waitFor(t, "ready again once the port opens", func() bool { return g.health(t) == "200 queue" })
}
