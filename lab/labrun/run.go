package labrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/podgate/podgate/lab"
	"github.com/podgate/podgate/lab/manifest"
	"github.com/podgate/podgate/lab/scenario"
	"github.com/podgate/podgate/record"
	"github.com/podgate/podgate/record/timeline"
)

// DefaultPodCIDR is the first scenario's pod range; the scenario at
// index i of a run takes the i-th range of the same size after it, so
// scenarios run at the same time never share an address (nor the test
// app's fixed ports on it).
const DefaultPodCIDR = "127.0.200.0/24"

// NodeName is the node every scenario's pods run on: the same on every
// machine, so a recording does not carry the host's name.
const NodeName = "podgate-lab"

// Config says how to run scenarios.
type Config struct {
	// Binary is the podgate executable `podgate run` is started from.
	Binary string
	// RecordDir receives NAME.jsonl, the recording of each scenario (and
	// NAME.log, podgate's output, when it failed); SVGDir NAME.svg, its
	// picture (default RecordDir).
	RecordDir, SVGDir string
	// PodCIDR is the first scenario's pod range (default DefaultPodCIDR).
	PodCIDR string
	// Parallel runs that many scenarios at once (default 1).
	Parallel int
	// Table prints each run's timeline table before its verdict.
	Table bool
	// Out receives each scenario's report, in the order given, each as
	// soon as it and those before it are done.
	Out io.Writer
	// MaxStepTimeout caps every step's timeout (0: each step's own): a
	// run expected to fail, against a deliberately broken build, need
	// not wait out 90 s for a state that never comes.
	MaxStepTimeout time.Duration
}

// Verdict is one judged rule.
type Verdict struct {
	Rule   string
	Pass   bool
	Detail string
}

// Result is one scenario's run.
type Result struct {
	Scenario *scenario.Scenario
	// Verdicts: the steps, podgate's stop, then every expectation.
	Verdicts []Verdict
	// Recording and Picture are the files written ("" when none was).
	Recording, Picture string
	Took               time.Duration
	// Report is what Run printed for it.
	Report string
}

// Passed reports whether every verdict passed.
func (r *Result) Passed() bool {
	for _, v := range r.Verdicts {
		if !v.Pass {
			return false
		}
	}
	return len(r.Verdicts) > 0
}

// Run runs the scenarios, at most cfg.Parallel at once, and reports each
// to cfg.Out. Its error is a configuration that cannot run at all; a
// scenario that fails is a Result that did not pass.
func Run(ctx context.Context, cfg Config, scenarios []*scenario.Scenario) ([]*Result, error) {
	cfg, cidrs, err := cfg.prepare(len(scenarios))
	if err != nil {
		return nil, err
	}
	results := make([]*Result, len(scenarios))
	done := make([]chan struct{}, len(scenarios))
	sem := make(chan struct{}, cfg.Parallel)
	var wg sync.WaitGroup
	for i, s := range scenarios {
		done[i] = make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done[i])
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				results[i] = &Result{Scenario: s, Verdicts: []Verdict{{Rule: "run", Detail: ctx.Err().Error()}}}
				results[i].Report = report(results[i], "")
				return
			}
			defer func() { <-sem }()
			results[i] = runOne(ctx, cfg, s, cidrs[i])
		}()
	}
	for i := range scenarios {
		<-done[i]
		if cfg.Out != nil {
			_, _ = io.WriteString(cfg.Out, results[i].Report)
		}
	}
	wg.Wait()
	return results, nil
}

// prepare fills in defaults and picks each scenario's pod range.
func (cfg Config) prepare(n int) (Config, []string, error) {
	if cfg.Binary == "" {
		return cfg, nil, errors.New("scenario: Config.Binary is required")
	}
	if cfg.RecordDir == "" {
		cfg.RecordDir = "."
	}
	if cfg.SVGDir == "" {
		cfg.SVGDir = cfg.RecordDir
	}
	for _, d := range []string{cfg.RecordDir, cfg.SVGDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return cfg, nil, err
		}
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = 1
	}
	if cfg.PodCIDR == "" {
		cfg.PodCIDR = DefaultPodCIDR
	}
	cidrs, err := PodCIDRs(cfg.PodCIDR, n)
	return cfg, cidrs, err
}

// PodCIDRs are n consecutive ranges of first's size, starting at first,
// all inside 127.0.0.0/8.
func PodCIDRs(first string, n int) ([]string, error) {
	p, err := netip.ParsePrefix(first)
	if err != nil || !p.Addr().Is4() {
		return nil, fmt.Errorf("pod range %q: want an IPv4 CIDR such as %s", first, DefaultPodCIDR)
	}
	p = p.Masked()
	loopback := netip.MustParsePrefix("127.0.0.0/8")
	if p.Bits() < 8 || p.Bits() > 30 || !loopback.Contains(p.Addr()) {
		return nil, fmt.Errorf("pod range %q: want a range inside 127.0.0.0/8, from /8 to /30", first)
	}
	size := uint32(1) << (32 - p.Bits())
	a4 := p.Addr().As4()
	base := uint32(a4[0])<<24 | uint32(a4[1])<<16 | uint32(a4[2])<<8 | uint32(a4[3])
	var out []string
	for i := range n {
		v := base + uint32(i)*size
		next := netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), p.Bits())
		if !loopback.Contains(next.Addr()) || v < base {
			return nil, fmt.Errorf("pod range %q: %d scenarios need ranges beyond 127.0.0.0/8", first, n)
		}
		out = append(out, next.String())
	}
	return out, nil
}

// runOne runs one scenario from start to verdict; it never panics on a
// failed step: the world is stopped, and what there is written and
// judged.
func runOne(ctx context.Context, cfg Config, s *scenario.Scenario, cidr string) *Result {
	began := time.Now()
	res := &Result{Scenario: s}
	fail := func(rule string, err error) {
		res.Verdicts = append(res.Verdicts, Verdict{Rule: rule, Detail: err.Error()})
		res.Took = time.Since(began)
		res.Report = report(res, "")
	}
	work, err := os.MkdirTemp("", "podgate-scenario-"+s.Name+"-")
	if err != nil {
		fail("prepare", err)
		return res
	}
	defer os.RemoveAll(work)
	files, err := writeManifests(s, work)
	if err != nil {
		fail("manifests", err)
		return res
	}
	runFile := filepath.Join(work, "run.jsonl")
	args := []string{"--record", runFile, "--node-name", NodeName}
	if s.Replicas > 0 {
		args = append(args, "--replicas", strconv.Itoa(s.Replicas))
	}
	r := &runner{s: s, tl: lab.NewTimeline(), pods: map[string]*boundPod{}, maxStep: cfg.MaxStepTimeout}
	startCtx, cancel := context.WithTimeout(ctx, scenario.DefaultStepTimeout)
	w, err := lab.StartLocal(startCtx, lab.Config{Binary: cfg.Binary, PodCIDR: cidr, Files: files, Args: args}, s.Load.Service)
	cancel()
	if err != nil {
		fail("podgate run starts", err)
		return res
	}
	r.w = w
	res.Verdicts = append(res.Verdicts, r.steps(ctx))
	res.Verdicts = append(res.Verdicts, r.stop())
	return r.finish(cfg, res, work, s.Name, began, func(path string) (*timeline.Model, []record.Fact, error) {
		return r.record(runFile, path)
	})
}

// finish writes the recording (rec writes it to the path it is given)
// and the picture, as base.jsonl and base.svg, judges the expectations
// and writes the report.
func (r *runner) finish(cfg Config, res *Result, work, base string, began time.Time, rec func(path string) (*timeline.Model, []record.Fact, error)) *Result {
	s := r.s
	var table string
	m, facts, err := rec(filepath.Join(cfg.RecordDir, base+".jsonl"))
	if err != nil {
		res.Verdicts = append(res.Verdicts, Verdict{Rule: "recording", Detail: err.Error()})
	} else {
		res.Recording = filepath.Join(cfg.RecordDir, base+".jsonl")
		res.Picture = filepath.Join(cfg.SVGDir, base+".svg")
		if err := writePicture(res.Picture, m.Header, facts, work); err != nil {
			res.Picture = ""
			res.Verdicts = append(res.Verdicts, Verdict{Rule: "picture", Detail: err.Error()})
		}
		if cfg.Table {
			table = textTable(m)
		}
		j := &judge{r: r, m: m, namespace: r.w.Namespace(), output: r.w.Output}
		for _, e := range s.Expect {
			res.Verdicts = append(res.Verdicts, j.judge(e))
		}
	}
	if !res.Passed() {
		logFile := filepath.Join(cfg.RecordDir, base+".log")
		if err := os.WriteFile(logFile, []byte(r.w.Logs()), 0o644); err == nil {
			res.Verdicts = append(res.Verdicts, Verdict{Rule: "podgate's output", Pass: true, Detail: "in " + logFile})
		}
	}
	res.Took = time.Since(began)
	res.Report = report(res, table)
	return res
}

// writeManifests writes each manifest, changed as the scenario says,
// into dir and returns the files.
func writeManifests(s *scenario.Scenario, dir string) ([]string, error) {
	var files []string
	for i, ms := range s.Manifests {
		what := fmt.Sprintf("manifests[%d]", i)
		text := ms.Inline
		if ms.File != "" {
			what += " " + ms.File
			p := ms.File
			if !filepath.IsAbs(p) {
				p = filepath.Join(s.Dir, p)
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", what, err)
			}
			text = string(data)
		}
		for _, r := range ms.Replace {
			if !strings.Contains(text, r.Old) {
				return nil, fmt.Errorf("%s: replace: the manifest does not contain %q", what, r.Old)
			}
			text = strings.ReplaceAll(text, r.Old, strings.ReplaceAll(r.New, "$(WORKDIR)", dir))
		}
		m, err := manifest.Parse([]byte(text))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if set := ms.Set; set != nil {
			for field, v := range map[string]*int64{"terminationGracePeriodSeconds": set.TerminationGracePeriodSeconds, "timeoutSeconds": set.TimeoutSeconds} {
				if v == nil {
					continue
				}
				if err := m.SetPodSpec(field, *v); err != nil {
					return nil, fmt.Errorf("%s: set: %w", what, err)
				}
			}
		}
		for _, a := range ms.Args {
			if err := m.AppendArgs(a.Container, a.Append...); err != nil {
				return nil, fmt.Errorf("%s: args: %w", what, err)
			}
		}
		f, err := m.Write(dir, fmt.Sprintf("manifest-%d.yaml", i))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		files = append(files, f)
	}
	return files, nil
}

// report is a scenario's block of the output: its name and description,
// the table when asked for, where the files went, each verdict and the
// result.
func report(res *Result, table string) string {
	var b strings.Builder
	s := res.Scenario
	fmt.Fprintf(&b, "=== %s", s.Name)
	if d := firstLine(s.Description); d != "" {
		fmt.Fprintf(&b, ": %s", d)
	}
	b.WriteString("\n")
	if table != "" {
		b.WriteString(table)
		if !strings.HasSuffix(table, "\n") {
			b.WriteString("\n")
		}
	}
	if res.Recording != "" {
		fmt.Fprintf(&b, "recording: %s\n", res.Recording)
	}
	if res.Picture != "" {
		fmt.Fprintf(&b, "picture:   %s\n", res.Picture)
	}
	for _, v := range res.Verdicts {
		word := "FAIL"
		if v.Pass {
			word = "PASS"
		}
		fmt.Fprintf(&b, "  %s  %s", word, v.Rule)
		if v.Detail != "" {
			fmt.Fprintf(&b, ": %s", strings.ReplaceAll(strings.TrimRight(v.Detail, "\n"), "\n", "\n        "))
		}
		b.WriteString("\n")
	}
	word := "FAIL"
	if res.Passed() {
		word = "PASS"
	}
	fmt.Fprintf(&b, "%s %s (%s)\n\n", word, s.Name, res.Took.Round(100*time.Millisecond))
	return b.String()
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(l)
}

// Summary is the last lines of a run: how many passed, and which failed;
// ok when every one passed.
func Summary(results []*Result) (string, bool) {
	var failed []string
	for _, r := range results {
		if !r.Passed() {
			failed = append(failed, r.Scenario.Name)
		}
	}
	s := fmt.Sprintf("%d of %d scenarios passed\n", len(results)-len(failed), len(results))
	if len(failed) > 0 {
		s += "failed: " + strings.Join(failed, ", ") + "\n"
	}
	return s, len(failed) == 0
}
