// Command knativetraffic runs the seed experiments on real Knative Serving
// with both queue sidecars in one run — podgate's gate and Knative's own
// queue-proxy, each on a `podgate cluster up --knative` of its own, side
// by side — through both request paths (Knative's activator in the path,
// target-burst-capacity -1; the ingress straight to the pods, 0), and
// prints what the clients saw as a markdown table (docs/comparison.md):
//
//	go run ./test/bench/knativetraffic            # as root: clusters need network namespaces
//
// It measures; it asserts nothing. `podgate lab run --knative` judges the
// scenario files with verdicts.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/lab"
	"github.com/podgate/podgate/lab/kubelab"
	"github.com/podgate/podgate/lab/load"
	"github.com/podgate/podgate/lab/manifest"
)

// The cluster's network namespace is entered from this goroutine
// (package podnet's rule).
func init() { runtime.LockOSThread() }

func main() {
	var (
		sidecars = flag.String("queue-proxy", "gate,knative", "queue sidecars to compare, comma-separated")
		examples = flag.String("examples", "examples", "the repository's examples directory")
		outage   = flag.Duration("outage", 6*time.Second, "how long a sidecar stays unready")
	)
	flag.Parse()
	if err := run(strings.Split(*sidecars, ","), *examples, *outage); err != nil {
		fmt.Fprintln(os.Stderr, "knativetraffic:", err)
		os.Exit(1)
	}
}

// result is one scenario's run on one sidecar and path.
type result struct {
	scenario, sidecar, path string
	replicas                int
	readiness               bool
	rec                     *load.Recording
	// lateServed: answers from the pod whose container was made unready
	// (or was restarting) that completed from 1 s after the change until
	// it was ready again; lastAt: the last of its answers before then,
	// from the change.
	lateServed int
	lastAt     time.Duration
	err        error
}

func run(sidecars []string, examples string, outage time.Duration) error {
	dir, err := os.MkdirTemp("", "knativetraffic-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "podgate")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/podgate")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	var (
		mu      sync.Mutex
		results []result
		wg      sync.WaitGroup
		errs    []error
	)
	for i, sidecar := range sidecars {
		wg.Go(func() {
			rs, err := onCluster(bin, filepath.Join(dir, sidecar), fmt.Sprintf("10.252.%d.0/24", 10+i), sidecar, examples, outage)
			mu.Lock()
			defer mu.Unlock()
			results = append(results, rs...)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", sidecar, err))
			}
		})
	}
	wg.Wait()
	printTable(results)
	return errors.Join(errs...)
}

// scenario is one seed experiment: its manifest, replicas, and what it
// does to the pod while the load runs (returning when the change began
// and when the pod was ready again).
type scenario struct {
	name     string
	example  string
	replace  []string
	replicas int
	// readiness: the scenario turns a container unready, so the pod
	// should answer nothing from 1 s after until it is ready again (a
	// restart or a delete is judged by failures alone).
	readiness bool
	act       func(ctx context.Context, w lab.World, pod *corev1.Pod, outage time.Duration) (from, to time.Time, err error)
}

func scenarios() []scenario {
	toggleOff := func(port int, toggle string) func(ctx context.Context, w lab.World, pod *corev1.Pod, outage time.Duration) (time.Time, time.Time, error) {
		return func(ctx context.Context, w lab.World, pod *corev1.Pod, outage time.Duration) (time.Time, time.Time, error) {
			off := time.Now()
			if err := w.PodHTTP().Toggle(ctx, pod.Status.PodIP, port, toggle, false); err != nil {
				return off, off, err
			}
			time.Sleep(outage)
			back := time.Now()
			return off, back, w.PodHTTP().Toggle(ctx, pod.Status.PodIP, port, toggle, true)
		}
	}
	sidecar1x1 := []string{"port: 8090\n            periodSeconds: 1", "port: 8090\n            periodSeconds: 1\n            failureThreshold: 1"}
	return []scenario{
		{name: "a sidecar turns unready (probe 1 s × 1), 2 replicas", example: "multi-container-readiness", replace: sidecar1x1, replicas: 2, readiness: true, act: toggleOff(8090, lab.ToggleReady)},
		{name: "a sidecar turns unready (probe 1 s × 1), 1 replica", example: "multi-container-readiness", replace: sidecar1x1, replicas: 1, readiness: true, act: toggleOff(8090, lab.ToggleReady)},
		{name: "seed 002: a sidecar's exec readiness (1 s × 1) fails, 1 replica", example: "sidecar-exec-readiness", replicas: 1, readiness: true, act: toggleOff(8090, lab.ToggleExec),
			replace: []string{`ready"]
            periodSeconds: 1`, `ready"]
            periodSeconds: 1
            failureThreshold: 1`}},
		{name: "the serving container's liveness restart, 1 replica", example: "multi-container-liveness", replicas: 1,
			act: func(ctx context.Context, w lab.World, pod *corev1.Pod, _ time.Duration) (time.Time, time.Time, error) {
				off := time.Now()
				before := lab.ContainerStatus(pod, "first-container").RestartCount
				if err := w.PodHTTP().Toggle(ctx, pod.Status.PodIP, 8080, lab.ToggleLive, false); err != nil {
					return off, off, err
				}
				_, err := lab.WaitPod(ctx, w, "first-container restarted and the pod ready", func(p *corev1.Pod) error {
					if p.Name != pod.Name {
						return errors.New("another pod")
					}
					if err := lab.Restarted("first-container", before)(p); err != nil {
						return err
					}
					return lab.PodReady(p)
				})
				return off, time.Now(), err
			}},
		{name: "a pod deleted under load, 2 replicas", example: "multi-container-liveness", replicas: 2,
			act: func(ctx context.Context, w lab.World, pod *corev1.Pod, _ time.Duration) (time.Time, time.Time, error) {
				off := time.Now()
				if err := w.DeletePod(ctx, w.Namespace(), pod.Name, metav1.DeleteOptions{}); err != nil {
					return off, off, err
				}
				err := lab.WaitPodGone(ctx, w, pod.Name)
				return off, time.Now(), err
			}},
	}
}

// onCluster starts one Knative cluster with the sidecar and runs every
// scenario on both paths there, in namespaces of their own, side by side.
func onCluster(bin, dir, cidr, sidecar, examples string, outage time.Duration) ([]result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	c, err := kubelab.Start(ctx, kubelab.Config{Binary: bin, Dir: dir, PodCIDR: cidr, Knative: sidecar})
	if err != nil {
		return nil, err
	}
	defer func() { _, _ = c.Stop(2 * time.Minute) }()
	var (
		mu  sync.Mutex
		out []result
		wg  sync.WaitGroup
	)
	for i, sc := range scenarios() {
		for _, path := range []kubelab.Path{kubelab.ThroughActivator, kubelab.ThroughIngress} {
			wg.Go(func() {
				r := runScenario(ctx, c, fmt.Sprintf("s%d-%s", i, path), path, sc, examples, outage)
				r.sidecar, r.path = sidecar, string(path)
				mu.Lock()
				out = append(out, r)
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	return out, nil
}

func runScenario(ctx context.Context, c *kubelab.Cluster, ns string, path kubelab.Path, sc scenario, examples string, outage time.Duration) (r result) {
	r = result{scenario: sc.name, replicas: sc.replicas, readiness: sc.readiness}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	m, err := manifest.Read(filepath.Join(examples, sc.example+".yaml"), sc.replace...)
	if err != nil {
		r.err = err
		return r
	}
	if err := m.SetPodSpec("timeoutSeconds", 30); err != nil {
		r.err = err
		return r
	}
	w, err := c.KnativeNamespace(ctx, ns)
	if err != nil {
		r.err = err
		return r
	}
	defer func() { _ = w.Stop(3 * time.Minute) }()
	_, services, err := m.ForKnative(sc.replicas, -1)
	if err != nil || len(services) == 0 {
		r.err = fmt.Errorf("no Knative Service in %s: %v", sc.example, err)
		return r
	}
	service := services[0]
	if err := w.Apply(ctx, m, sc.replicas, path, true); err != nil {
		r.err = err
		return r
	}
	var pods []corev1.Pod
	err = lab.Poll(ctx, lab.PollInterval, "ready pods", func(ctx context.Context) (bool, error) {
		list, err := w.ListPods(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		pods = pods[:0]
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil && lab.PodReady(&p) == nil {
				pods = append(pods, p)
			}
		}
		return len(pods) == sc.replicas, fmt.Errorf("%d ready", len(pods))
	})
	if err != nil {
		r.err = err
		return r
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	victim := &pods[0]
	l, err := load.Start(load.Config{URL: w.FrontDoorURL(), Host: w.Host(service), Workers: 8, Rate: 200})
	if err != nil {
		r.err = err
		return r
	}
	time.Sleep(3 * time.Second)
	from, to, actErr := sc.act(ctx, w, victim, outage)
	time.Sleep(3 * time.Second)
	stopCtx, stopCancel := context.WithTimeout(ctx, 2*time.Minute)
	r.rec = l.Stop(stopCtx)
	stopCancel()
	r.err = actErr
	for _, q := range r.rec.Requests {
		end := q.Start.Add(q.Duration)
		if !q.OK() || strings.TrimSpace(q.Body) != victim.Name || !end.Before(to) || end.Before(from) {
			continue
		}
		r.lastAt = max(r.lastAt, end.Sub(from))
		if end.After(from.Add(time.Second)) {
			r.lateServed++
		}
	}
	return r
}

func printTable(results []result) {
	sort.Slice(results, func(i, j int) bool {
		a, b := results[i], results[j]
		if a.scenario != b.scenario {
			return a.scenario < b.scenario
		}
		if a.path != b.path {
			return a.path < b.path
		}
		return a.sidecar < b.sidecar
	})
	fmt.Println("| scenario | path | queue sidecar | requests | 200 | failed (by status) | answered by the unready pod from +1 s until ready again | its last answer after the toggle |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, r := range results {
		if r.rec == nil {
			fmt.Printf("| %s | %s | %s | – | – | – | – | error: %v |\n", r.scenario, r.path, r.sidecar, r.err)
			continue
		}
		fails := map[string]int{}
		for _, q := range r.rec.Failures() {
			k := fmt.Sprint(q.Status)
			if q.Status == 0 {
				k = "no answer"
			}
			fails[k]++
		}
		var fs []string
		for k, n := range fails {
			fs = append(fs, fmt.Sprintf("%d × %s", n, k))
		}
		sort.Strings(fs)
		failed := "0"
		if len(fs) > 0 {
			failed = strings.Join(fs, ", ")
		}
		late, note := "–", "–"
		if r.readiness {
			late, note = fmt.Sprint(r.lateServed), fmt.Sprintf("%+.2f s", r.lastAt.Seconds())
		}
		if r.err != nil {
			note += fmt.Sprintf(" (error: %v)", r.err)
		}
		fmt.Printf("| %s | %s | %s | %d | %d | %s | %s | %s |\n", r.scenario, r.path, r.sidecar,
			len(r.rec.Requests), len(r.rec.Requests)-len(r.rec.Failures()), failed, late, note)
	}
}
