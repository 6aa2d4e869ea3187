// Package k8sbin finds the real Kubernetes control-plane binaries (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler, kubectl) that
// podgate's Kubernetes-mode tests and benchmarks run.
//
// They are never assumed to be installed: Dir runs hack/k8s-build.sh,
// which builds them from the versions pinned in hack/k8s into a cache
// keyed by those pins (a cache hit takes milliseconds, a cold build minutes,
// and concurrent callers wait on the script's lock). A test therefore never
// skips for want of a binary; it builds it, or fails with the build's error.
//
// Set does the same for any build script of that kind: internal/knativebin
// uses it for the Knative stack's binaries (hack/knative-build.sh).
package k8sbin

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
)

// The binaries Dir provides.
const (
	Etcd                  = "etcd"
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
	Kubectl               = "kubectl"
)

// Names lists every binary Dir provides.
var Names = []string{Etcd, KubeAPIServer, KubeControllerManager, KubeScheduler, Kubectl}

// EnvDir names a directory that already holds the binaries; when set,
// Dir checks it and builds nothing (for a machine without the source
// tree, e.g. a benchmark run from a copied binary).
const EnvDir = "PODGATE_K8S_BIN"

// Script is the build script, relative to the module root.
const Script = "hack/k8s-build.sh"

const module = "github.com/podgate/podgate"

// tailLines is how much of the build's stderr an error quotes.
const tailLines = 30

// ControlPlane is the set Dir provides: hack/k8s-build.sh's binaries.
var ControlPlane = Set{
	What:   "Kubernetes binaries",
	Script: Script,
	EnvDir: EnvDir,
	Names:  Names,
}

var dir = sync.OnceValues(find)

// Dir returns the directory holding all of Names, building them first
// when the cache has none. The answer (a directory or an error) is
// computed once per process.
func Dir() (string, error) { return dir() }

// Path returns the path of one binary (one of Names).
func Path(name string) (string, error) {
	d, err := Dir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, name), nil
}

func find() (string, error) { return Ensure(nil) }

// Ensure is Dir for a command that needs the binaries once (`podgate
// cluster up`): it is not cached, and the script's progress lines (on a
// cache miss, one per binary as its build starts) are copied to progress
// as they come, when it is not nil.
func Ensure(progress io.Writer) (string, error) { return ControlPlane.Ensure(progress) }

// Build runs the build script and returns the directory it printed, once
// it holds every binary. A failed build's error quotes the last lines of
// the script's stderr.
func Build(script string) (string, error) { return BuildTo(script, nil) }

// BuildTo is Build with the script's stderr also copied to progress (nil:
// not copied).
func BuildTo(script string, progress io.Writer) (string, error) {
	return ControlPlane.BuildTo(script, progress)
}

// A Set is the binaries one build script of hack/ provides: a script that
// builds them into a cache directory when they are not there yet and
// prints that directory as its last line on stdout, its progress on
// stderr (hack/k8s-build.sh, hack/knative-build.sh).
type Set struct {
	// What the binaries are, for errors ("Kubernetes binaries").
	What string
	// Script is the build script, relative to the module root.
	Script string
	// EnvDir names an environment variable that, when set, names a
	// directory already holding the binaries: it is checked, nothing is
	// built (for a machine without the source tree).
	EnvDir string
	// Names are the binaries the directory must hold.
	Names []string
}

// Ensure returns the directory holding all of s.Names: $EnvDir when set,
// else what s.Script (found in podgate's source tree above the working
// directory) printed. The script's stderr is copied to progress as it
// comes, when progress is not nil.
func (s Set) Ensure(progress io.Writer) (string, error) {
	if d := os.Getenv(s.EnvDir); d != "" {
		return d, s.check(d, "$"+s.EnvDir)
	}
	root, err := s.moduleRoot()
	if err != nil {
		return "", err
	}
	return s.BuildTo(filepath.Join(root, s.Script), progress)
}

// BuildTo runs script and returns the directory it printed, once it holds
// every one of s.Names. A failed build's error quotes the last lines of
// the script's stderr, which is also copied to progress (nil: not copied).
func (s Set) BuildTo(script string, progress io.Writer) (string, error) {
	var stdout bytes.Buffer
	stderr := &tail{max: tailLines}
	cmd := exec.Command("bash", script)
	cmd.Stdout = &stdout
	cmd.Stderr = stderr
	if progress != nil {
		cmd.Stderr = io.MultiWriter(stderr, progress)
	}
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build the %s (%s): %w\n%s", s.What, script, err, stderr)
	}
	d := strings.TrimSpace(stdout.String())
	if i := strings.LastIndexByte(d, '\n'); i >= 0 {
		d = d[i+1:] // the directory is the last line
	}
	if d == "" {
		return "", fmt.Errorf("build the %s (%s): it printed no directory\n%s", s.What, script, stderr)
	}
	return d, s.check(d, script)
}

// check reports the binaries missing from d.
func (s Set) check(d, from string) error {
	var missing []string
	for _, n := range s.Names {
		if fi, err := os.Stat(filepath.Join(d, n)); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s from %s: %s has no executable %s", s.What, from, d, strings.Join(missing, ", "))
	}
	return nil
}

// moduleRoot finds podgate's source tree: up from the working directory
// (a test runs in its package's directory), else up from this file's
// compile-time path (a binary built in the tree, without -trimpath).
func (s Set) moduleRoot() (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if _, file, _, ok := goruntime.Caller(0); ok && filepath.IsAbs(file) {
		starts = append(starts, filepath.Dir(file))
	}
	for _, start := range starts {
		for d := start; ; d = filepath.Dir(d) {
			if isRoot(d, s.Script) {
				return d, nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "", fmt.Errorf("%s: no podgate source tree (with %s) above %s; set $%s to a directory holding %s",
		s.What, s.Script, strings.Join(starts, " or "), s.EnvDir, strings.Join(s.Names, ", "))
}

func isRoot(d, script string) bool {
	if _, err := os.Stat(filepath.Join(d, script)); err != nil {
		return false
	}
	f, err := os.Open(filepath.Join(d, "go.mod"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.TrimSpace(m) == module
		}
	}
	return false
}

// tail keeps the last max lines written to it.
type tail struct {
	max   int
	lines []string
	part  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.part = append(t.part, p...)
	for {
		i := bytes.IndexByte(t.part, '\n')
		if i < 0 {
			break
		}
		t.lines = append(t.lines, string(t.part[:i]))
		t.part = t.part[i+1:]
		if len(t.lines) > t.max {
			t.lines = t.lines[len(t.lines)-t.max:]
		}
	}
	return len(p), nil
}

func (t *tail) String() string {
	out := strings.Join(t.lines, "\n")
	if len(t.part) > 0 {
		out += "\n" + string(t.part)
	}
	if out == "" {
		return "(no output on stderr)"
	}
	return out
}
