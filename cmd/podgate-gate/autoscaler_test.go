package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/podgate/podgate/gate/autoscalerstats"
	"github.com/podgate/podgate/test/queueenv"
)

// TestTheAutoscalerScrapesTheGateAsQueueProxy drives a known load through
// the real gate binary in the queue container's environment and scrapes
// its autoscaler port as Knative's autoscaler does, every window of the
// run. Over the run, the windows' request counts add up to exactly the
// requests sent (the kubelet's health checks, sent all along, count for
// nothing), the activator's requests to exactly those sent with
// K-Proxy-Request: activator, and the windows' average concurrencies to
// the request-seconds the clients saw, within 10 %, and so for the
// activator's share; the windows in the steady middle of the run are
// within 10 % of the driven concurrency and rate.
func TestTheAutoscalerScrapesTheGateAsQueueProxy(t *testing.T) {
	const (
		plain, proxied = 7, 3                   // client loops, each one request at a time
		hold           = 200 * time.Millisecond // the app's time per request
		run            = 4 * time.Second        // how long the load runs
		tolerance      = 0.10                   // of the driven value
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

	g := startQueueGate(t, bin, queueenv.Revision{Pod: pod, UserPort: app.Addr().(*net.TCPAddr).Port})
	g.waitReady(t)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	trafficURL, statsURL := g.url+"/", g.statsURL

	// Before any traffic: the pod's name and nothing counted.
	s, err := scrapeAsAutoscaler(client, statsURL, knativeBodyMax)
	if err != nil {
		t.Fatal(err)
	}
	if s.GetPodName() != pod || s.GetRequestCount() != 0 || s.GetAverageConcurrentRequests() != 0 {
		t.Fatalf("before traffic: %v", s)
	}

	// The scraper: every window's Stat, keyed by its uptime (the window's
	// end: whole seconds since the gate started).
	var (
		mu      sync.Mutex
		windows = map[float64]*autoscalerstats.Stat{}
		latest  float64
	)
	last := func() float64 { mu.Lock(); defer mu.Unlock(); return latest }
	scrapeCtx, stopScraping := context.WithCancel(context.Background())
	scraped := make(chan error, 1)
	go func() {
		for scrapeCtx.Err() == nil {
			s, err := scrapeAsAutoscaler(client, statsURL, knativeBodyMax)
			if err != nil {
				scraped <- err
				return
			}
			k := math.Round(s.GetProcessUptime()) // the timer fires a little after the second
			mu.Lock()
			windows[k] = s
			latest = max(latest, k)
			mu.Unlock()
			time.Sleep(50 * time.Millisecond)
		}
		scraped <- nil
	}()
	defer stopScraping()
	waitForWindowAfter := func(after float64) float64 {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for last() <= after {
			if time.Now().After(deadline) {
				t.Fatalf("no window reported after uptime %v within 10s", after)
			}
			time.Sleep(10 * time.Millisecond)
		}
		return last()
	}
	// Every request of the load arrives after this window ended.
	first := waitForWindowAfter(0)

	// The load: loops staggered over one hold so arrivals spread evenly,
	// and the kubelet's health checks every 10 ms alongside.
	type tally struct {
		requests, proxied int
		seconds, proxSecs float64 // request-seconds as the clients saw them
		failures          []string
	}
	var (
		tallyMu sync.Mutex
		sent    tally
	)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	loops := plain + proxied
	for i := range loops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * hold / time.Duration(loops))
			for ctx.Err() == nil {
				req, _ := http.NewRequest(http.MethodGet, trafficURL, nil) // not cancelled: every request ends
				if i < proxied {
					req.Header.Set("K-Proxy-Request", "activator")
				}
				began := time.Now()
				resp, err := client.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				took := time.Since(began).Seconds()
				tallyMu.Lock()
				sent.requests++
				sent.seconds += took
				if i < proxied {
					sent.proxied++
					sent.proxSecs += took
				}
				if err != nil {
					sent.failures = append(sent.failures, err.Error())
				} else if resp.StatusCode != http.StatusOK {
					sent.failures = append(sent.failures, resp.Status)
				}
				tallyMu.Unlock()
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
	time.Sleep(run)
	cancel()
	wg.Wait()
	// Every request has ended: the window after the current one holds
	// the last of them, and the one after that none.
	waitForWindowAfter(waitForWindowAfter(last()))
	stopScraping()
	if err := <-scraped; err != nil {
		t.Fatal(err)
	}
	for _, f := range sent.failures {
		t.Errorf("a request failed: %s", f)
	}

	// Add up the windows after first, none missing.
	var got tally
	var steady struct {
		windows           int
		requests, proxied float64
	}
	mu.Lock()
	defer mu.Unlock()
	end := latest
	within := func(got, want float64) bool { return math.Abs(got-want) <= tolerance*want }
	for k := first + 1; k <= end; k++ {
		s, ok := windows[k]
		if !ok {
			t.Fatalf("the window ending at uptime %vs was never scraped (seen: %d windows up to %vs): a stall longer than 1 s?", k, len(windows), end)
		}
		if s.GetPodName() != pod || s.GetTimestamp() != 0 {
			t.Errorf("pod %q, timestamp %d; want %q and 0 (queue-proxy never sets it)", s.GetPodName(), s.GetTimestamp(), pod)
		}
		t.Logf("uptime %2.0fs: concurrency %.3f (proxied %.3f), %2.0f requests/s (proxied %2.0f)", k,
			s.GetAverageConcurrentRequests(), s.GetAverageProxiedConcurrentRequests(), s.GetRequestCount(), s.GetProxiedRequestCount())
		// One-second windows: requests per second are the window's
		// requests, average concurrency its request-seconds.
		got.requests += int(math.Round(s.GetRequestCount()))
		got.proxied += int(math.Round(s.GetProxiedRequestCount()))
		got.seconds += s.GetAverageConcurrentRequests()
		got.proxSecs += s.GetAverageProxiedConcurrentRequests()
		// The steady middle: a whole window of load after the loops'
		// staggered start, before the load's end.
		// Driven: every loop has one request in flight, and the rate is
		// what that gives at the latency the clients saw (Little's law;
		// a loaded machine stretches the app's 200 ms).
		// Concurrency is held by the loops, window by window; the rate
		// follows the app's latency, which a loaded machine makes vary
		// from one second to the next, so it is held over the steady
		// windows together.
		if k >= first+3 && k <= first+float64(run/time.Second) {
			steady.windows++
			steady.requests += s.GetRequestCount()
			steady.proxied += s.GetProxiedRequestCount()
			if conc := float64(loops); !within(s.GetAverageConcurrentRequests(), conc) {
				t.Errorf("uptime %vs: concurrency %.3f; driven %.0f (±10%%)", k, s.GetAverageConcurrentRequests(), conc)
			}
			if pconc := float64(proxied); !within(s.GetAverageProxiedConcurrentRequests(), pconc) {
				t.Errorf("uptime %vs: proxied concurrency %.3f; driven %.0f (±10%%)", k, s.GetAverageProxiedConcurrentRequests(), pconc)
			}
		}
	}
	if steady.windows == 0 {
		t.Fatal("no steady window")
	}
	rps, prps := float64(loops)/(sent.seconds/float64(sent.requests)), float64(proxied)/(sent.proxSecs/float64(sent.proxied))
	if got, gotp := steady.requests/float64(steady.windows), steady.proxied/float64(steady.windows); !within(got, rps) || !within(gotp, prps) {
		t.Errorf("steady windows: %.1f requests/s, %.1f of them the activator's; driven %.1f and %.1f (±10%%)", got, gotp, rps, prps)
	}
	if last := windows[end]; last.GetRequestCount() != 0 || last.GetAverageConcurrentRequests() != 0 {
		t.Errorf("the last window, after the load, reports %v; want nothing", last)
	}
	t.Logf("sent %d requests (%d the activator's), %.2f request-seconds (%.2f); the windows add up to %d (%d), %.2f (%.2f)",
		sent.requests, sent.proxied, sent.seconds, sent.proxSecs, got.requests, got.proxied, got.seconds, got.proxSecs)
	if got.requests != sent.requests || got.proxied != sent.proxied {
		t.Errorf("the windows count %d requests, %d of them the activator's; sent %d and %d (health checks must not count)",
			got.requests, got.proxied, sent.requests, sent.proxied)
	}
	if !within(got.seconds, sent.seconds) || !within(got.proxSecs, sent.proxSecs) {
		t.Errorf("the windows' concurrency adds up to %.2f request-seconds, %.2f of them the activator's; the clients saw %.2f and %.2f (±10%%)",
			got.seconds, got.proxSecs, sent.seconds, sent.proxSecs)
	}

	// The same requests in queue-proxy's Prometheus names on the metrics
	// port; no queue depth without CONTAINER_CONCURRENCY.
	resp, err := client.Get(g.metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	wantLine := fmt.Sprintf(`kn_serving_invocation_duration_seconds_count{http_response_status_code="200",otel_scope_name="knative.dev/serving/pkg/queue",otel_scope_schema_url="",otel_scope_version=""} %d`, sent.requests)
	if !strings.Contains(string(page), wantLine+"\n") || strings.Contains(string(page), "kn_serving_queue_depth") {
		t.Errorf("the metrics page lacks %q or has kn_serving_queue_depth:\n%s", wantLine, page)
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
func scrapeAsAutoscaler(client *http.Client, url string, maxBody int64) (*autoscalerstats.Stat, error) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Add("Accept", "application/protobuf")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return nil, fmt.Errorf("scrape %s: status %d", url, resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/protobuf" {
		return nil, fmt.Errorf("scrape %s: Content-Type %q, the autoscaler accepts only application/protobuf", url, ct)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	var s autoscalerstats.Stat
	if err := proto.Unmarshal(body, &s); err != nil {
		return nil, fmt.Errorf("scrape %s: %q is not a Stat: %w", url, body, err)
	}
	if strings.TrimSpace(s.GetPodName()) == "" {
		return nil, fmt.Errorf("scrape %s: no pod name in %v", url, &s)
	}
	return &s, nil
}
