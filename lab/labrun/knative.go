package labrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/podgate/podgate/lab"
	"github.com/podgate/podgate/lab/kubelab"
	"github.com/podgate/podgate/lab/manifest"
	"github.com/podgate/podgate/lab/scenario"
	"github.com/podgate/podgate/record"
	"github.com/podgate/podgate/record/kubewatch"
	"github.com/podgate/podgate/record/timeline"
)

// The queue sidecars a Knative run compares.
const (
	SidecarGate    = "gate"
	SidecarKnative = "knative"
)

// DefaultKnativePodCIDR is the first Knative cluster's pod range; the
// next sidecar's cluster takes the next range of its size.
const DefaultKnativePodCIDR = "10.252.1.0/24"

// KnativeConfig says how to run scenarios on Knative: one `cluster up
// --knative` per queue sidecar, side by side, and every scenario for
// each sidecar × path × replicas in a namespace of its own.
type KnativeConfig struct {
	// Binary is the podgate executable (CGO_ENABLED=0: it is its own image).
	Binary string
	// RecordDir receives SCENARIO.SIDECAR.PATH.rN.jsonl (and .log when it
	// failed); SVGDir the .svg (default RecordDir).
	RecordDir, SVGDir string
	// ClusterDir holds each cluster's directory (default a temporary one).
	ClusterDir string
	// Sidecars are the queue sidecars (default gate and knative).
	Sidecars []string
	// Paths are the request paths (default activator and ingress).
	Paths []kubelab.Path
	// Replicas, when set, runs each scenario with each of these pod
	// counts instead of its own replicas (or 1).
	Replicas []int
	// PodCIDR is the first cluster's pod range (default DefaultKnativePodCIDR).
	PodCIDR string
	// Parallel runs that many scenarios at once, over all clusters (default 1).
	Parallel int
	// Out receives each run's report as it ends.
	Out io.Writer
}

// KnativeRun is one scenario's run on one sidecar, path and pod count,
// with its counts.
type KnativeRun struct {
	Sidecar  string
	Path     kubelab.Path
	Replicas int
	*Result
	Counts Counts
	// NotRun says why the scenario was not run on Knative; empty when it
	// was. Such a run neither passes nor fails: the table says not run.
	NotRun string
}

// NotRunOnKnative is why a scenario whose pods are never ready is not run
// on Knative: Knative routes a revision only once it has been Ready, so
// with either queue sidecar the ingress answers 404 and no request
// reaches a pod; there is nothing of the gate's to judge.
const NotRunOnKnative = "its pods are never ready, and Knative routes a revision only once it has been Ready (the ingress answers 404 with either queue sidecar)"

// neverReady: the scenario does not start by waiting for ready pods.
func neverReady(s *scenario.Scenario) bool {
	return len(s.Steps) == 0 || s.Steps[0].Wait == nil || s.Steps[0].Wait.PodsReady == 0
}

// Counts are the load's requests as the clients saw them.
type Counts struct {
	Sent, OK int
	// Failed by status: "502", "503", "504", "other" (another status, or
	// no answer).
	Failed map[string]int
	// ToUnready is how many requests the pod whose container a toggle
	// made unready answered (the test app answers with its pod's name)
	// from 1 s after that container's readiness probe called it unready
	// (the toggle, plus the probe's period × failure threshold) until it
	// was toggled back; -1 when
	// the scenario has no such toggle.
	ToUnready int
}

// job is one run to make.
type job struct {
	s        *scenario.Scenario
	sidecar  string
	path     kubelab.Path
	replicas int
	ns       string
}

func (cfg KnativeConfig) prepare() (KnativeConfig, []string, func(), error) {
	cleanup := func() {}
	if cfg.Binary == "" {
		return cfg, nil, cleanup, errors.New("labrun: KnativeConfig.Binary is required")
	}
	if len(cfg.Sidecars) == 0 {
		cfg.Sidecars = []string{SidecarGate, SidecarKnative}
	}
	for _, s := range cfg.Sidecars {
		if s != SidecarGate && s != SidecarKnative {
			return cfg, nil, cleanup, fmt.Errorf("queue sidecar %q: want gate or knative", s)
		}
	}
	if len(cfg.Paths) == 0 {
		cfg.Paths = []kubelab.Path{kubelab.ThroughActivator, kubelab.ThroughIngress}
	}
	for _, p := range cfg.Paths {
		if _, err := p.Burst(); err != nil {
			return cfg, nil, cleanup, err
		}
	}
	for _, n := range cfg.Replicas {
		if n < 1 {
			return cfg, nil, cleanup, fmt.Errorf("replicas %d: want at least 1", n)
		}
	}
	if cfg.RecordDir == "" {
		cfg.RecordDir = "."
	}
	if cfg.SVGDir == "" {
		cfg.SVGDir = cfg.RecordDir
	}
	for _, d := range []string{cfg.RecordDir, cfg.SVGDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return cfg, nil, cleanup, err
		}
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = 1
	}
	if cfg.PodCIDR == "" {
		cfg.PodCIDR = DefaultKnativePodCIDR
	}
	cidrs, err := ClusterPodCIDRs(cfg.PodCIDR, len(cfg.Sidecars))
	if err != nil {
		return cfg, nil, cleanup, err
	}
	if cfg.ClusterDir == "" {
		d, err := os.MkdirTemp("", "podgate-knative-lab-")
		if err != nil {
			return cfg, nil, cleanup, err
		}
		cfg.ClusterDir, cleanup = d, func() { _ = os.RemoveAll(d) }
	}
	return cfg, cidrs, cleanup, nil
}

// ClusterPodCIDRs are n consecutive ranges of first's size, outside
// 127.0.0.0/8 (a cluster's pods live in its own network namespace).
func ClusterPodCIDRs(first string, n int) ([]string, error) {
	p, err := netip.ParsePrefix(first)
	if err != nil || !p.Addr().Is4() || p.Bits() < 16 || p.Bits() > 28 {
		return nil, fmt.Errorf("pod range %q: want an IPv4 CIDR from /16 to /28 such as %s", first, DefaultKnativePodCIDR)
	}
	p = p.Masked()
	if netip.MustParsePrefix("127.0.0.0/8").Contains(p.Addr()) {
		return nil, fmt.Errorf("pod range %q: a cluster's pods are outside 127.0.0.0/8", first)
	}
	size := uint32(1) << (32 - p.Bits())
	a4 := p.Addr().As4()
	base := uint32(a4[0])<<24 | uint32(a4[1])<<16 | uint32(a4[2])<<8 | uint32(a4[3])
	var out []string
	for i := range n {
		v := base + uint32(i)*size
		if v < base || byte(v>>24) != a4[0] {
			return nil, fmt.Errorf("pod range %q: %d clusters need ranges beyond %d.0.0.0/8", first, n, a4[0])
		}
		out = append(out, netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), p.Bits()).String())
	}
	return out, nil
}

// RunKnative starts one Knative cluster per sidecar, side by side, runs
// every scenario for each sidecar × path × replicas, at most
// cfg.Parallel at once, and stops the clusters. Its error is a
// configuration that cannot run or a cluster that did not start; a
// scenario that fails is a run that did not pass.
func RunKnative(ctx context.Context, cfg KnativeConfig, scenarios []*scenario.Scenario) ([]*KnativeRun, error) {
	cfg, cidrs, cleanup, err := cfg.prepare()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	clusters := make(map[string]*kubelab.Cluster, len(cfg.Sidecars))
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for i, sc := range cfg.Sidecars {
		wg.Go(func() {
			c, err := kubelab.Start(ctx, kubelab.Config{Binary: cfg.Binary, Dir: filepath.Join(cfg.ClusterDir, sc), PodCIDR: cidrs[i], Knative: sc})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("the %s cluster: %w", sc, err))
				return
			}
			clusters[sc] = c
		})
	}
	wg.Wait()
	defer func() {
		for sc, c := range clusters {
			if code, err := c.Stop(2 * time.Minute); err != nil || code != 0 {
				fmt.Fprintf(os.Stderr, "labrun: the %s cluster stopped with exit %d: %v\n", sc, code, err)
			}
		}
	}()
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	jobs := knativeJobs(cfg, scenarios)
	runs := make([]*KnativeRun, len(jobs))
	sem := make(chan struct{}, cfg.Parallel)
	for i, jb := range jobs {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				res := &Result{Scenario: jb.s, Verdicts: []Verdict{{Rule: "run", Detail: ctx.Err().Error()}}}
				res.Report = report(res, "")
				runs[i] = &KnativeRun{Sidecar: jb.sidecar, Path: jb.path, Replicas: jb.replicas, Result: res, Counts: Counts{ToUnready: -1}}
				return
			}
			defer func() { <-sem }()
			if neverReady(jb.s) {
				res := &Result{Scenario: jb.s}
				res.Report = fmt.Sprintf("=== %s: not run on Knative: %s\n", jb.s.Name, NotRunOnKnative)
				runs[i] = &KnativeRun{Sidecar: jb.sidecar, Path: jb.path, Replicas: jb.replicas, Result: res, Counts: Counts{ToUnready: -1}, NotRun: NotRunOnKnative}
			} else {
				runs[i] = runKnativeOne(ctx, cfg, clusters[jb.sidecar], jb)
			}
			if cfg.Out != nil {
				mu.Lock()
				_, _ = io.WriteString(cfg.Out, runs[i].Report)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return runs, nil
}

// knativeJobs is every scenario × sidecar × path × replicas, scenario
// by scenario, each with a namespace of its own.
func knativeJobs(cfg KnativeConfig, scenarios []*scenario.Scenario) []job {
	var jobs []job
	for si, s := range scenarios {
		replicas := cfg.Replicas
		if len(replicas) == 0 {
			replicas = []int{max(s.Replicas, 1)}
		}
		for _, sc := range cfg.Sidecars {
			for _, p := range cfg.Paths {
				for _, n := range replicas {
					jobs = append(jobs, job{s: s, sidecar: sc, path: p, replicas: n,
						ns: fmt.Sprintf("lab-%d-%s-%s-r%d", si+1, sc, p, n)})
				}
			}
		}
	}
	return jobs
}

// collector keeps the facts of a watch.
type collector struct {
	mu    sync.Mutex
	facts []record.Fact
}

func (c *collector) Record(f record.Fact) {
	c.mu.Lock()
	c.facts = append(c.facts, f)
	c.mu.Unlock()
}

// runKnativeOne runs one scenario in a namespace of the cluster: the
// cluster's facts of the namespace recorded as `podgate record` records
// them, the scenario's Knative Services applied, its steps, the
// namespace deleted, then the recording (with the load's requests as
// request facts, each with the pod that answered it) and the verdicts.
func runKnativeOne(ctx context.Context, cfg KnativeConfig, c *kubelab.Cluster, jb job) *KnativeRun {
	began := time.Now()
	s := jb.s
	run := &KnativeRun{Sidecar: jb.sidecar, Path: jb.path, Replicas: jb.replicas, Result: &Result{Scenario: s}, Counts: Counts{ToUnready: -1}}
	res := run.Result
	base := fmt.Sprintf("%s.%s.%s.r%d", s.Name, jb.sidecar, jb.path, jb.replicas)
	fail := func(rule string, err error) *KnativeRun {
		res.Verdicts = append(res.Verdicts, Verdict{Rule: rule, Detail: err.Error()})
		res.Took = time.Since(began)
		res.Report = knativeReport(run, report(res, ""))
		return run
	}
	work, err := os.MkdirTemp("", "podgate-scenario-"+s.Name+"-")
	if err != nil {
		return fail("prepare", err)
	}
	defer os.RemoveAll(work)
	// The pods run as Knative's non-root user: exec probe files in work.
	if err := os.Chmod(work, 0o777); err != nil {
		return fail("prepare", err)
	}
	files, err := writeManifests(s, work)
	if err != nil {
		return fail("manifests", err)
	}
	stepCtx, cancel := context.WithTimeout(ctx, 3*scenario.DefaultStepTimeout)
	defer cancel()
	kn, err := c.KnativeNamespace(stepCtx, jb.ns)
	if err != nil {
		return fail("namespace", err)
	}
	col := &collector{}
	started := time.Now()
	watch, err := kubewatch.Start(stepCtx, kubewatch.Config{Client: c.Client(), Namespace: jb.ns, Sink: col, ProbesFromEvents: true})
	if err != nil {
		_ = kn.Stop(scenario.DefaultStepTimeout)
		return fail("recording starts", err)
	}
	r := &runner{s: s, w: kn, pods: map[string]*boundPod{}, onKnative: true}
	if err := applyAll(stepCtx, kn, files, jb); err != nil {
		_ = kn.Stop(scenario.DefaultStepTimeout)
		_ = watch.Stop(context.Background())
		return fail("Knative Services ready and routed", err)
	}
	r.tl = lab.NewTimeline()
	res.Verdicts = append(res.Verdicts, r.steps(ctx))
	res.Verdicts = append(res.Verdicts, r.stop())
	if err := watch.Stop(context.Background()); err != nil {
		res.Verdicts = append(res.Verdicts, Verdict{Rule: "recording", Detail: err.Error()})
	}
	run.Counts = countsOf(r, func(port int, exec bool) (time.Duration, bool) { return unreadyAfter(files, port, exec) })
	h := record.Header{Format: record.FormatName, Version: record.Version, Source: "kube/cluster", Started: started,
		Detail: fmt.Sprintf("podgate lab run --knative %s: %s (queue sidecar %s, path %s, %d pods)", s.File, s.Name, jb.sidecar, jb.path, jb.replicas)}
	r.finish(Config{RecordDir: cfg.RecordDir, SVGDir: cfg.SVGDir}, res, work, base, began, func(path string) (*timeline.Model, []record.Fact, error) {
		col.mu.Lock()
		facts := append(col.facts, requestFacts(r, kn.Namespace())...)
		col.mu.Unlock()
		return r.writeRecording(h, record.Sorted(facts), path)
	})
	if !res.Passed() {
		col.mu.Lock()
		pods := podsOf(col.facts)
		col.mu.Unlock()
		if err := appendFile(filepath.Join(cfg.RecordDir, base+".log"), containerLines(kn.Output(), pods, kn.Namespace())); err != nil {
			res.Verdicts = append(res.Verdicts, Verdict{Rule: "containers' output", Detail: err.Error()})
			res.Report = report(res, "")
		}
	}
	res.Report = knativeReport(run, res.Report)
	return run
}

// podsOf is every pod the facts name.
func podsOf(facts []record.Fact) map[string]bool {
	pods := map[string]bool{}
	for _, f := range facts {
		if f.Pod != "" {
			pods[f.Pod] = true
		}
	}
	return pods
}

// containerLines is what explains a failed run on Knative: every output
// line of the run's pods' containers (the gate's and the app's), and
// Knative's activator's lines that name the run's namespace (its proxy
// errors name the revision) or no revision at all (a panic, its
// server's errors), pod by pod.
func containerLines(output string, pods map[string]bool, namespace string) string {
	var b strings.Builder
	b.WriteString("\ncontainers' output (the run's pods; the activator's lines naming " + namespace + " or no revision):\n")
	for _, l := range strings.Split(output, "\n") {
		pod, _, ok := strings.Cut(l, "/")
		if !ok {
			continue
		}
		if pods[pod] || (strings.HasPrefix(pod, "activator-") && (strings.Contains(l, namespace) || !strings.Contains(l, "knative.dev/key"))) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// appendFile adds text at the end of the file at path.
func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	return errors.Join(err, f.Close())
}

// applyAll applies each manifest file as Knative Services. A scenario
// that starts by waiting for ready pods needs them routed before its
// load; one whose pods never get ready is not waited for.
func applyAll(ctx context.Context, kn *kubelab.KnativeNamespace, files []string, jb job) error {
	routed := !neverReady(jb.s)
	for _, f := range files {
		m, err := manifest.Read(f)
		if err != nil {
			return err
		}
		if err := kn.Apply(ctx, m, jb.replicas, jb.path, routed); err != nil {
			return err
		}
	}
	return nil
}

// requestFacts are the load's requests as request facts: the pod that
// answered is the test app's answer, its pod's name.
func requestFacts(r *runner, ns string) []record.Fact {
	if r.rec == nil {
		return nil
	}
	target := ns + "/" + r.s.Load.Service
	var out []record.Fact
	for i, q := range r.rec.Requests {
		f := record.Fact{Time: q.End(), Kind: record.KindRequest, Namespace: ns, Request: &record.Request{
			ID: uint64(i + 1), Target: target, Method: "GET", Path: "/", Start: q.Start, Status: q.Status, Latency: q.Duration, Error: q.Err}}
		if q.OK() {
			f.Pod = strings.TrimSpace(q.Body)
		}
		out = append(out, f)
	}
	return out
}

// countsOf counts the load's requests. unreadyAfter is how long the
// toggled container's readiness probe takes to call it unready (its
// period × failure threshold, from the scenario's manifests).
func countsOf(r *runner, unreadyAfter func(port int, exec bool) (time.Duration, bool)) Counts {
	c := Counts{Failed: map[string]int{}, ToUnready: -1}
	if r.rec == nil {
		return c
	}
	var pod string
	var from, to time.Time
	for _, t := range r.toggles {
		if t.kind == "live" {
			continue
		}
		if pod == "" && !t.set {
			// A toggle that fails no readiness probe (an exec file that
			// only liveness reads) makes nothing unready.
			d, ok := unreadyAfter(t.port, t.kind == "exec")
			if !ok {
				continue
			}
			pod, from = t.pod, t.at.Add(d+time.Second)
		} else if pod != "" && t.pod == pod && t.set && to.IsZero() {
			to = t.at
		}
	}
	if pod != "" {
		c.ToUnready = 0
	}
	for _, q := range r.rec.Requests {
		c.Sent++
		switch {
		case q.OK():
			c.OK++
			// By when the pod answered: a request its gate held until the
			// container was ready again never reached it while unready.
			if end := q.End(); pod != "" && strings.TrimSpace(q.Body) == pod && !end.Before(from) && (to.IsZero() || end.Before(to)) {
				c.ToUnready++
			}
		case q.Err == "" && (q.Status == 502 || q.Status == 503 || q.Status == 504):
			c.Failed[fmt.Sprint(q.Status)]++
		default:
			c.Failed["other"]++
		}
	}
	return c
}

// unreadyAfter is UnreadyAfter of the first manifest file that has
// port with such a readiness probe.
func unreadyAfter(files []string, port int, exec bool) (time.Duration, bool) {
	for _, f := range files {
		m, err := manifest.Read(f)
		if err != nil {
			continue
		}
		if d, ok := m.UnreadyAfter(port, exec); ok {
			return d, true
		}
	}
	return 0, false
}

// knativeReport heads a run's report with its sidecar, path and pods.
func knativeReport(run *KnativeRun, rep string) string {
	return fmt.Sprintf("--- queue sidecar %s, path %s, %d pod(s)\n%s", run.Sidecar, run.Path, run.Replicas, rep)
}
