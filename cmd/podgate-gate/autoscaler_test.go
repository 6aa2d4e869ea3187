package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/podgate/podgate/gate/autoscalerstats"
	"github.com/podgate/podgate/test/queueenv"
)

// TestTheAutoscalerScrapesTheGateAsQueueProxy drives a known load through
// the real gate binary in the queue container's environment and scrapes
// its autoscaler port as Knative's autoscaler does: every 1 s window
// inside the load reports the concurrency, the requests per second and
// the activator's share of both within 10 % of what was driven, and the
// kubelet's health checks, sent all along, count for nothing.
func TestTheAutoscalerScrapesTheGateAsQueueProxy(t *testing.T) {
	const (
		plain, proxied = 7, 3                     // client loops, each one request at a time
		hold           = 200 * time.Millisecond   // the app's time per request
		measureFrom    = 2500 * time.Millisecond  // windows scraped from here (they start after 0.5 s, past the loops' staggered start)…
		measureTo      = 5 * time.Second          // …to here; the load runs until the scrapes end
		wantConc       = float64(plain + proxied) // requests in flight at any time
		wantRPS        = wantConc / 0.2           // each loop: one per hold
		wantProxConc   = float64(proxied)         //
		wantProxRPS    = wantProxConc / 0.2       //
		tolerance      = 0.10                     // of the driven value
		pod            = "hello-00001-deployment-x7bsv7j-qp5l7"
		knativeBodyMax = 6*10 + 256 + 20 // the autoscaler reads no more of the body
	)
	bin := gateBinary(t)

	app, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(hold)
		_, _ = io.WriteString(w, "done\n")
	})}
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(app) }()
	defer func() { _ = srv.Close(); <-served }()

	userPort := app.Addr().(*net.TCPAddr).Port
	servingPort, statsPort := freePort(t), freePort(t)
	rev := queueenv.Revision{
		Namespace: "default", Service: "hello", Configuration: "hello", Revision: "hello-00001",
		Pod: pod, PodIP: "127.0.0.1", HostIP: "127.0.0.1",
		ServingPort: servingPort, UserPort: userPort,
	}
	cmd := exec.Command(bin)
	cmd.Env = append(rev.Env(), "PODGATE_ADMIN_PORT=0", "PODGATE_METRICS_PORT=0",
		"PODGATE_AUTOSCALER_PORT="+strconv.Itoa(statsPort), "PODGATE_DRAIN_QUIET_PERIOD=0s")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}()

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	trafficURL := fmt.Sprintf("http://127.0.0.1:%d/", servingPort)
	statsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", statsPort)

	// The gate is up once it answers the kubelet's health check.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if code, _ := healthCheck(client, trafficURL); code == http.StatusOK {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("the gate exited: %v\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gate is not ready after 30s\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Before any traffic: the pod's name, an uptime, nothing else.
	s := scrapeAsAutoscaler(t, client, statsURL, knativeBodyMax)
	if s.GetPodName() != pod || s.GetRequestCount() != 0 || s.GetAverageConcurrentRequests() != 0 {
		t.Fatalf("before traffic: %v", s)
	}

	// The load: loops staggered over one hold so arrivals spread evenly,
	// and the kubelet's health checks every 10 ms alongside.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var failures sync.Map
	loops := plain + proxied
	for i := range loops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * hold / time.Duration(loops))
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, trafficURL, nil)
				if i < proxied {
					req.Header.Set("K-Proxy-Request", "activator")
				}
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						failures.Store(i, err.Error())
					}
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					failures.Store(i, resp.Status)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			_, _ = healthCheck(client, trafficURL)
			time.Sleep(10 * time.Millisecond)
		}
	}()
	start := time.Now()
	stopLoad := func() { cancel(); wg.Wait() }
	defer stopLoad()

	// Scrape as the autoscaler does, every 100 ms from measureFrom to
	// measureTo: each distinct window (its uptime) is checked once.
	windows := map[float64]*autoscalerstats.Stat{}
	for time.Since(start) < measureFrom {
		time.Sleep(10 * time.Millisecond)
	}
	for time.Since(start) < measureTo {
		s := scrapeAsAutoscaler(t, client, statsURL, knativeBodyMax)
		if time.Since(start) < measureTo { // the window ended inside the load
			windows[s.GetProcessUptime()] = s
		}
		time.Sleep(100 * time.Millisecond)
	}
	stopLoad()
	failures.Range(func(k, v any) bool {
		t.Errorf("client loop %v: %v", k, v)
		return true
	})

	if len(windows) < 2 {
		t.Fatalf("only %d distinct windows scraped in %v: the Stat is not reported every second", len(windows), measureTo-measureFrom)
	}
	within := func(got, want float64) bool { return math.Abs(got-want) <= tolerance*want }
	for _, s := range windows {
		t.Logf("uptime %.3fs: concurrency %.3f (proxied %.3f), %.1f requests/s (proxied %.1f)", s.GetProcessUptime(),
			s.GetAverageConcurrentRequests(), s.GetAverageProxiedConcurrentRequests(), s.GetRequestCount(), s.GetProxiedRequestCount())
		if s.GetPodName() != pod || s.GetTimestamp() != 0 {
			t.Errorf("pod %q, timestamp %d; want %q and 0 (queue-proxy never sets it)", s.GetPodName(), s.GetTimestamp(), pod)
		}
		if !within(s.GetAverageConcurrentRequests(), wantConc) || !within(s.GetRequestCount(), wantRPS) {
			t.Errorf("concurrency %.3f, %.1f requests/s; driven %.0f and %.0f (±10%%; health checks must not count)",
				s.GetAverageConcurrentRequests(), s.GetRequestCount(), wantConc, wantRPS)
		}
		if !within(s.GetAverageProxiedConcurrentRequests(), wantProxConc) || !within(s.GetProxiedRequestCount(), wantProxRPS) {
			t.Errorf("proxied concurrency %.3f, %.1f proxied requests/s; driven %.0f and %.0f (±10%%)",
				s.GetAverageProxiedConcurrentRequests(), s.GetProxiedRequestCount(), wantProxConc, wantProxRPS)
		}
	}

	// Idle again: a whole window without traffic reports zeros.
	deadline = time.Now().Add(10 * time.Second)
	for {
		s := scrapeAsAutoscaler(t, client, statsURL, knativeBodyMax)
		if s.GetRequestCount() == 0 && s.GetAverageConcurrentRequests() == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the load the Stat still reports %v", s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// healthCheck is the kubelet's readiness check of the queue container.
func healthCheck(client *http.Client, url string) (int, error) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("User-Agent", "kube-probe/1.37")
	req.Header.Set("K-Network-Probe", "queue")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// scrapeAsAutoscaler is Knative's autoscaler's scrape of a pod (its
// httpScrapeClient): GET with Accept: application/protobuf, a 2xx status
// and exactly that Content-Type required, at most maxBody bytes read,
// decoded as a Stat.
func scrapeAsAutoscaler(t *testing.T, client *http.Client, url string, maxBody int64) *autoscalerstats.Stat {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Add("Accept", "application/protobuf")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		t.Fatalf("scrape %s: status %d", url, resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/protobuf" {
		t.Fatalf("scrape %s: Content-Type %q, the autoscaler accepts only application/protobuf", url, ct)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	var s autoscalerstats.Stat
	if err := proto.Unmarshal(body, &s); err != nil {
		t.Fatalf("scrape %s: %q is not a Stat: %v", url, body, err)
	}
	if strings.TrimSpace(s.GetPodName()) == "" {
		t.Fatalf("scrape %s: no pod name in %v", url, &s)
	}
	return &s
}
