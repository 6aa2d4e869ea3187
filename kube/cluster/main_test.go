package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podgate/podgate/internal/leftovers"
	"github.com/podgate/podgate/node/netns"
	"github.com/podgate/podgate/node/proc"
	"github.com/podgate/podgate/test/syncbuf"
)

// podgateBin is the podgate binary built for these tests: they run
// `podgate cluster up` as the real process it is.
var podgateBin string

// waitLimit bounds a wait for the cluster (its start, a pod, a stop) on a
// loaded 2-core machine; a passing test never waits that long.
const waitLimit = 3 * time.Minute

// The test's own goroutines may use podnet's Do; the main goroutine keeps
// the main thread, as podnet asks of a program that uses it.
func init() { runtime.LockOSThread() }

func TestMain(m *testing.M) {
	// Before anything else: the guardian of the Supervisors these tests
	// start is this test binary, re-executed.
	proc.RunReaperIfAsked()
	check := leftovers.Isolate()
	dir, err := os.MkdirTemp("", "podgate-cluster-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	podgateBin = filepath.Join(dir, "podgate")
	// Static, as hack/image.sh builds it: cluster up's install puts
	// podgate itself into its image. (-trimpath as buildStatic builds, so
	// that its test finds this build in the cache.)
	build := exec.Command("go", "build", "-trimpath", "-o", podgateBin, "github.com/podgate/podgate/cmd/podgate")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build podgate: %v\n%s", err, out)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) { _ = os.RemoveAll(dir); check(code) }))
}

func eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %s", what, timeout, why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// upProcess is a running `podgate cluster up`.
type upProcess struct {
	t              testing.TB
	dir, cidr      string
	cmd            *exec.Cmd
	stdout, stderr *syncbuf.Buffer
	exited         chan struct{}
	exitErr        error
	began          time.Time

	rec    pidRecord
	config *rest.Config
	client *kubernetes.Clientset
	ns     *netns.Netns // the cluster's network namespace, to dial pods

	// frontDoor is the front door's URL and upToDoor how long cluster up
	// said it took to get there, once installed.
	frontDoor, upToDoor string
}

// startUp runs `podgate cluster up --no-install` (a bare cluster) in a
// directory of the test's with pod CIDR cidr and a free API port, and
// waits until DIR/kubeconfig is written (the node is Ready then).
// Cleanup stops it with SIGINT if the test did not, and kills whatever of
// it is left.
func startUp(t testing.TB, cidr string, extra ...string) *upProcess {
	t.Helper()
	return start(t, cidr, append([]string{"--no-install"}, extra...))
}

// startInstalled runs `podgate cluster up` with podgate installed and the
// front door on a free port, and waits until the front door is printed.
func startInstalled(t testing.TB, cidr string) *upProcess {
	t.Helper()
	u := start(t, cidr, []string{"--front-door", "127.0.0.1:0"})
	re := regexp.MustCompile(`podgate: front door on (http://127\.0\.0\.1:\d+) \(cluster up to front door ready: ([^)]+)\)`)
	eventually(t, waitLimit, "cluster up printing its front door", func() (bool, string) {
		select {
		case <-u.exited:
			t.Fatalf("cluster up exited before its front door was ready: %v\nstderr:\n%s", u.exitErr, u.stderr.String())
		default:
		}
		m := re.FindStringSubmatch(u.stderr.String())
		if m == nil {
			return false, "not yet"
		}
		u.frontDoor, u.upToDoor = m[1], m[2]
		return true, ""
	})
	return u
}

// start runs cluster up with extra arguments and waits for its
// kubeconfig (written once the node is Ready, before the install).
func start(t testing.TB, cidr string, extra []string) *upProcess {
	t.Helper()
	u := launch(t, cidr, extra)
	u.waitUp()
	return u
}

// launch starts cluster up with extra arguments, without waiting.
func launch(t testing.TB, cidr string, extra []string) *upProcess {
	t.Helper()
	u := &upProcess{t: t, dir: t.TempDir(), cidr: cidr, stdout: &syncbuf.Buffer{}, stderr: &syncbuf.Buffer{}, exited: make(chan struct{})}
	args := append([]string{"cluster", "up", "--dir", u.dir, "--pod-cidr", cidr, "--listen", "127.0.0.1:0"}, extra...)
	u.cmd = exec.Command(podgateBin, args...)
	u.cmd.Stdout, u.cmd.Stderr = u.stdout, u.stderr
	u.began = time.Now()
	if err := u.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { u.exitErr = u.cmd.Wait(); close(u.exited) }()
	t.Cleanup(u.cleanup)
	return u
}

// waitUp waits for the launched cluster's kubeconfig (written once the
// node is Ready) and makes its clients.
func (u *upProcess) waitUp() {
	t := u.t
	t.Helper()
	kubeconfig := filepath.Join(u.dir, KubeconfigFile)
	eventually(t, waitLimit, "cluster up writing "+kubeconfig, func() (bool, string) {
		select {
		case <-u.exited:
			t.Fatalf("cluster up exited before it was ready: %v\nstderr:\n%s", u.exitErr, u.stderr.String())
		default:
		}
		_, err := os.Stat(kubeconfig)
		return err == nil, fmt.Sprint(err)
	})
	var err error
	if u.rec, err = readPidFile(u.dir); err != nil {
		t.Fatal(err)
	}
	if u.config, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
		t.Fatal(err)
	}
	u.config.QPS, u.config.Burst = 50, 100
	u.client = kubernetes.NewForConfigOrDie(u.config)
	if u.ns, err = netns.NetnsOf(u.rec.Pid); err != nil {
		t.Fatal(err)
	}
}

// interrupt sends SIGINT, as Ctrl-C does, and waits for the exit.
func (u *upProcess) interrupt() error {
	u.t.Helper()
	if u.ns != nil {
		_ = u.ns.Close()
		u.ns = nil
	}
	_ = u.cmd.Process.Signal(os.Interrupt)
	select {
	case <-u.exited:
		return u.exitErr
	case <-time.After(waitLimit):
		u.t.Fatalf("cluster up did not exit within %s of SIGINT\nstderr:\n%s", waitLimit, u.stderr.String())
		return nil
	}
}

func (u *upProcess) cleanup() {
	select {
	case <-u.exited:
	default:
		if err := u.interrupt(); err != nil {
			u.t.Errorf("cluster up after SIGINT: %v", err)
		}
	}
	if u.ns != nil {
		_ = u.ns.Close()
	}
	if left := SessionMembers(u.rec.Pid); u.rec.Pid > 0 && len(left) > 0 {
		u.t.Errorf("processes of the cluster left after the test: %v", describe(left))
		signalAll(left, syscall.SIGKILL)
	}
	if u.t.Failed() {
		u.t.Logf("cluster up stderr:\n%s", u.stderr.String())
		u.t.Logf("logs in %s", filepath.Join(u.dir, controlPlaneDir))
	}
}

// describe names processes for a message.
func describe(pids []int) []string {
	var out []string
	for _, pid := range pids {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		out = append(out, fmt.Sprintf("%d %s", pid, strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ")))
	}
	return out
}

// httpClient dials from inside the cluster's network namespace: pod IPs
// are reachable there, and only there.
func (u *upProcess) httpClient() *http.Client {
	ns := u.ns
	tr := &http.Transport{
		DisableKeepAlives: true,
		Proxy:             nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var c net.Conn
			err := ns.Do(func() error {
				var err error
				c, err = (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
				return err
			})
			return c, err
		},
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// get fetches http://ip:8080 + path inside the cluster.
func (u *upProcess) get(ip, path string) (int, string, error) {
	c := u.httpClient()
	defer c.CloseIdleConnections()
	resp, err := c.Get("http://" + net.JoinHostPort(ip, "8080") + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String(), nil
}

// waitPod polls a pod in namespace default until cond holds.
func (u *upProcess) waitPod(name, what string, cond func(*corev1.Pod) (bool, string)) *corev1.Pod {
	u.t.Helper()
	var last *corev1.Pod
	eventually(u.t, waitLimit, "pod "+name+": "+what, func() (bool, string) {
		p, err := u.client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		last = p
		return cond(p)
	})
	return last
}

// outputLine waits for a line of the pod's container output (relayed by
// cluster up on its stdout) that starts with prefix, and returns its rest.
func (u *upProcess) outputLine(pod, container, prefix string) string {
	u.t.Helper()
	var got string
	eventually(u.t, waitLimit, fmt.Sprintf("%s/%s printing %q", pod, container, prefix), func() (bool, string) {
		for _, line := range strings.Split(u.stdout.String(), "\n") {
			if rest, ok := strings.CutPrefix(line, pod+"/"+container+" | "+prefix); ok {
				got = rest
				return true, ""
			}
		}
		return false, "not yet"
	})
	return got
}

func ready(p *corev1.Pod) (bool, string) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return p.Status.Phase == corev1.PodRunning && c.Status == corev1.ConditionTrue, fmt.Sprintf("phase %s, Ready %s", p.Status.Phase, c.Status)
		}
	}
	return false, "phase " + string(p.Status.Phase) + ", no Ready condition"
}

// exitCode is the exit status of a finished command.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
