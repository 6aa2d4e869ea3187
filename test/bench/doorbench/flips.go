package main

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/lab"
	"github.com/podgate/podgate/lab/load"
	"github.com/podgate/podgate/local/podctl"
)

var apiAll = metav1.ListOptions{}

// sidecarPort is where the sidecar's test app takes its toggles.
const sidecarPort = 8090

type flipResult struct {
	replicas, flips int
	rate            float64
	length          time.Duration
	counts          map[string]int
	failures        []load.Request
	origin          time.Time
	lat             []time.Duration // every completed request, sorted
	flipper         string          // the pod whose sidecar flips
	byFlipper       int             // requests it answered
}

// measureFlips loads the service while the sidecar of one pod turns
// unready and ready again every o.flip.
func measureFlips(ctx context.Context, bin, manifest string, replicas int, o options) (*flipResult, error) {
	cidr := "127.0.89.0/24"
	if replicas == 1 {
		cidr = "127.0.87.0/24"
	}
	p, pod, err := startPodgate(ctx, bin, manifest, cidr, replicas)
	if err != nil {
		return nil, err
	}
	defer p.Stop(30 * time.Second)
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := waitReadyPods(waitCtx, p.Client(), replicas); err != nil {
		return nil, err
	}

	gen, err := load.Start(load.Config{URL: p.FrontDoorURL(), Host: host, Workers: 8, Rate: o.flipRate})
	if err != nil {
		return nil, err
	}
	res := &flipResult{replicas: replicas, rate: o.flipRate, origin: time.Now(), flipper: pod.Name}
	tick := time.NewTicker(o.flip)
	end := time.After(o.flipFor)
	ready := true
loop:
	for {
		select {
		case <-tick.C:
			ready = !ready
			if err := lab.Toggle(ctx, pod.Status.PodIP, sidecarPort, lab.ToggleReady, ready); err != nil {
				tick.Stop()
				gen.Stop(context.Background())
				return nil, err
			}
			res.flips++
		case <-end:
			break loop
		case <-ctx.Done():
			break loop
		}
	}
	tick.Stop()
	if !ready {
		if err := lab.Toggle(ctx, pod.Status.PodIP, sidecarPort, lab.ToggleReady, true); err != nil {
			gen.Stop(context.Background())
			return nil, err
		}
	}
	res.length = time.Since(res.origin)
	// Held requests are answered once the pod is ready again: wait for
	// them, then stop.
	stopCtx, cancelStop := context.WithTimeout(context.Background(), time.Minute)
	defer cancelStop()
	rec := gen.Stop(stopCtx)
	res.counts = rec.Counts()
	res.failures = rec.Failures()
	for _, q := range rec.Requests {
		res.lat = append(res.lat, q.Duration)
		// The test app answers with its pod's name.
		if q.OK() && strings.HasPrefix(q.Body, pod.Name) {
			res.byFlipper++
		}
	}
	slices.Sort(res.lat)
	return res, ctx.Err()
}

func waitReadyPods(ctx context.Context, c *podctl.Client, n int) error {
	return lab.Poll(ctx, lab.PollInterval, fmt.Sprintf("%d ready pods", n), func(ctx context.Context) (bool, error) {
		pods, err := c.CoreV1().Pods("").List(ctx, apiAll)
		if err != nil {
			return false, err
		}
		ready := 0
		for i := range pods.Items {
			if lab.PodReady(&pods.Items[i]) == nil && pods.Items[i].DeletionTimestamp == nil {
				ready++
			}
		}
		return ready >= n, fmt.Errorf("%d of %d pods ready", ready, len(pods.Items))
	})
}

func (r *flipResult) print() {
	total := 0
	for _, n := range r.counts {
		total += n
	}
	var codes []string
	for k, n := range r.counts {
		codes = append(codes, fmt.Sprintf("%s×%d", k, n))
	}
	sort.Strings(codes)
	who := "one of two pods flips, the other serves"
	if r.replicas == 1 {
		who = "the only pod flips: no pod ready half the time"
	}
	fmt.Printf("sidecar readiness flipping, %d replica(s) (%s)\n", r.replicas, who)
	fmt.Printf("  %d flips in %s at %.0f req/s offered: %d requests (%s), %d failed\n",
		r.flips, r.length.Round(time.Second), r.rate, total, strings.Join(codes, " "), len(r.failures))
	if len(r.lat) > 0 {
		fmt.Printf("  latency p50 %s, p99 %s, max %s\n",
			ms(r.lat[len(r.lat)/2]), ms(r.lat[int(0.99*float64(len(r.lat)-1))]), ms(r.lat[len(r.lat)-1]))
	}
	if r.replicas > 1 {
		fmt.Printf("  the flipping pod answered %d of them (out of service about half the time)\n", r.byFlipper)
	}
	for i, f := range r.failures {
		if i == 5 {
			fmt.Printf("  … %d more\n", len(r.failures)-5)
			break
		}
		fmt.Printf("  failed: %s\n", f.Format(r.origin))
	}
}
