package cluster

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/node/netns"
)

// footprint is what of a running cluster must be gone once it stopped.
type footprint struct {
	session    int
	namespaces []uint64 // the cluster's and every pod's network namespace
	api        string   // the host's API address
	// held keeps the namespaces open until assertGone has looked: a
	// namespace's inode number is reused once the namespace is gone, and
	// another cluster's pod (two test runs at once) would then seem to be
	// left in this one's.
	held []*netns.Netns
}

// footprintOf records the cluster's processes' namespaces while it runs
// a pod, so that the pods' namespaces are checked too.
func footprintOf(t *testing.T, u *upProcess) *footprint {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"}, Spec: testappSpec(false)}
	if _, err := u.client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	u.waitPod("app", "Ready", ready)
	fp := &footprint{session: u.rec.Pid}
	srv, err := url.Parse(u.rec.Server)
	if err != nil {
		t.Fatal(err)
	}
	fp.api = srv.Host
	for _, pid := range SessionMembers(fp.session) {
		ns, err := netns.NetnsOf(pid)
		if err != nil {
			continue // gone meanwhile
		}
		if slices.Contains(fp.namespaces, ns.Inode()) {
			_ = ns.Close()
			continue
		}
		fp.namespaces = append(fp.namespaces, ns.Inode())
		fp.held = append(fp.held, ns)
	}
	t.Cleanup(fp.release)
	// The cluster's, and the pod's of its own.
	if len(fp.namespaces) < 2 || !slices.Contains(fp.namespaces, u.rec.Netns) {
		t.Fatalf("namespaces of the cluster's processes %v: want the cluster's (%d) and a pod's", fp.namespaces, u.rec.Netns)
	}
	return fp
}

// release closes the namespaces held.
func (fp *footprint) release() {
	for _, ns := range fp.held {
		_ = ns.Close()
	}
	fp.held = nil
}

// assertGone checks that nothing of the cluster is left: no process of
// its session, no process in any of its namespaces, no listener on the
// host's API port, no interface of it on the host, no pid file or
// kubeconfig.
func (fp *footprint) assertGone(t *testing.T, dir string) {
	t.Helper()
	eventually(t, 10*time.Second, "no process of the cluster left", func() (bool, string) {
		left := SessionMembers(fp.session)
		return len(left) == 0, fmt.Sprint(describe(left))
	})
	// Every process of a pod is in the cluster's session, so none is
	// left in the namespaces either. (A test app once seemed to be,
	// right after cluster up exited, with two test runs at once: another
	// run's pod in a new namespace that had got the inode number of one
	// of this cluster's, gone by then. Held open, the numbers stay ours.)
	for _, ino := range fp.namespaces {
		if h := NetnsHolders(ino); len(h) > 0 {
			t.Errorf("network namespace %d still has processes %v", ino, describe(h))
		}
	}
	fp.release()
	if c, err := net.DialTimeout("tcp", fp.api, time.Second); err == nil {
		c.Close()
		t.Errorf("the API port %s still takes connections", fp.api)
	}
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifs {
		if i.Name == "podgate0" || strings.HasPrefix(i.Name, "pgv") {
			t.Errorf("interface %s in the host's namespace", i.Name)
		}
	}
	for _, f := range []string{PidFile, KubeconfigFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", f, err)
		}
	}
}

func TestCtrlCStopsEverything(t *testing.T) {
	u := startUp(t, "10.250.2.0/24")
	fp := footprintOf(t, u)
	begin := time.Now()
	if err := u.interrupt(); err != nil {
		t.Fatalf("cluster up after SIGINT: %v (want exit 0)\nstderr:\n%s", err, u.stderr.String())
	}
	t.Logf("cluster up exited %s after SIGINT", time.Since(begin).Round(time.Millisecond))
	// The pod stopped gracefully: SIGTERM, not a kill.
	if !strings.Contains(u.stderr.String(), `msg="Stopping container app" pod=default/app`) {
		t.Errorf("no graceful stop of the pod in the log:\n%s", u.stderr.String())
	}
	fp.assertGone(t, u.dir)
}

func TestKilledClusterUpIsStoppedByClusterDown(t *testing.T) {
	u := startUp(t, "10.250.3.0/24")
	fp := footprintOf(t, u)
	_ = u.ns.Close()
	u.ns = nil
	if err := u.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-u.exited
	out, err := exec.Command(podgateBin, "cluster", "down", "--dir", u.dir).CombinedOutput()
	if err != nil {
		t.Fatalf("cluster down: %v\n%s", err, out)
	}
	// The cluster process may have stopped on its own already (it gets
	// SIGTERM when cluster up dies); either way down says it is done.
	if !strings.Contains(string(out), "is stopped") && !strings.Contains(string(out), "has ended") {
		t.Errorf("cluster down said %q", out)
	}
	t.Logf("cluster down: %s", strings.TrimSpace(string(out)))
	fp.assertGone(t, u.dir)

	t.Run("cluster down again says none runs", func(t *testing.T) {
		out, err := exec.Command(podgateBin, "cluster", "down", "--dir", u.dir).CombinedOutput()
		if exitCode(err) != 0 || !strings.Contains(string(out), "no cluster runs there") {
			t.Errorf("exit %d, %q; want 0 and no cluster runs there", exitCode(err), out)
		}
	})
}

func TestClusterDownStopsARunningCluster(t *testing.T) {
	u := startUp(t, "10.250.4.0/24")
	fp := footprintOf(t, u)
	_ = u.ns.Close()
	u.ns = nil
	out, err := exec.Command(podgateBin, "cluster", "down", "--dir", u.dir).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "is stopped") {
		t.Fatalf("cluster down: %v\n%s", err, out)
	}
	// cluster up sees its cluster end as asked and exits cleanly.
	select {
	case <-u.exited:
	case <-time.After(waitLimit):
		t.Fatal("cluster up still runs after cluster down")
	}
	if u.exitErr != nil {
		t.Errorf("cluster up: %v, want exit 0\nstderr:\n%s", u.exitErr, u.stderr.String())
	}
	fp.assertGone(t, u.dir)
}
