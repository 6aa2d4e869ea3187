package cluster

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/internal/k8sbin"
	"github.com/podgate/podgate/internal/ociimage"
	"github.com/podgate/podgate/kube/deploy"
	"github.com/podgate/podgate/kube/install"
)

// frontDoorGet sends GET / with host to the front door.
func (u *upProcess) frontDoorGet(host string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, u.frontDoor+"/", nil)
	if err != nil {
		return 0, "", err
	}
	req.Host = host
	c := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}, Timeout: time.Minute}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b)), err
}

// processes are the cluster's processes by pid, with their command
// lines.
func (u *upProcess) processes() map[int][]string {
	out := map[int][]string{}
	for _, pid := range SessionMembers(u.rec.Pid) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil {
			out[pid] = strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		}
	}
	return out
}

// namespace creates namespace name with labels and waits for its default
// ServiceAccount.
func (u *upProcess) namespace(t *testing.T, name string, labels map[string]string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if _, err := u.client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitLimit, "the default ServiceAccount of "+name, func() (bool, string) {
		_, err := u.client.CoreV1().ServiceAccounts(name).Get(t.Context(), "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
}

// kubectl runs the cluster's kubectl with its kubeconfig.
func (u *upProcess) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	bin, err := k8sbin.Path(k8sbin.Kubectl)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, append([]string{"--kubeconfig", filepath.Join(u.dir, KubeconfigFile)}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestClusterUpInstallsPodgate(t *testing.T) {
	u := startInstalled(t, "10.250.5.0/24")
	t.Logf("cluster up to front door ready: %s by its own count, %s after the start as the test saw it",
		u.upToDoor, time.Since(u.began).Round(time.Millisecond))
	ctx := t.Context()

	t.Run("the webhook, the activator and the node status service run podgate's own binary, from the image the node finds in the cluster's layout", func(t *testing.T) {
		_, digest, err := ociimage.Build(podgateBin, install.ImageTag)
		if err != nil {
			t.Fatal(err)
		}
		want := deploy.Image + "@" + digest.String()
		for _, name := range []string{deploy.Webhook, deploy.Activator} {
			d, err := u.client.AppsV1().Deployments(deploy.Namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			c := d.Spec.Template.Spec.Containers[0]
			if c.Image != want || len(c.Command) != 0 {
				t.Errorf("%s runs image %q, command %q; want %s and the image's entrypoint", name, c.Image, c.Command, want)
			}
		}
		// The processes: the image's entrypoint, extracted into the
		// cluster's directory, with the Deployments' args.
		cache := filepath.Join(u.dir, imageCacheDir) + "/"
		found := map[string]bool{}
		for _, argv := range u.processes() {
			if len(argv) > 1 && strings.HasPrefix(argv[0], cache) && strings.HasSuffix(argv[0], ociimage.BinaryPath) {
				found[argv[1]] = true
			}
		}
		if !found["webhook"] || !found["activator"] || !found["node-status"] {
			t.Errorf("processes run from %s: %v; want podgate webhook, podgate activator and podgate node-status", cache, found)
		}
		ds, err := u.client.AppsV1().DaemonSets(deploy.Namespace).Get(ctx, deploy.NodeStatus, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if c := ds.Spec.Template.Spec.Containers[0]; c.Image != want || ds.Status.NumberReady != 1 {
			t.Errorf("DaemonSet %s: image %q, %d ready; want %s, ready on the node", deploy.NodeStatus, c.Image, ds.Status.NumberReady, want)
		}
	})

	// The gate's image, podgate-gate built from the source tree (the
	// test runs cluster up there), in the same layout.
	layout, err := ociimage.OpenLayout(filepath.Join(u.dir, imageDir))
	if err != nil {
		t.Fatal(err)
	}
	layout.CacheDir = t.TempDir()
	gateImg, err := layout.Resolve(install.GateImageTag)
	if err != nil {
		t.Fatal(err)
	}
	gateRef := deploy.GateImage + "@" + gateImg.Digest.String()

	t.Run("podgate's own pods are not probed for liveness or readiness before they listen (their startup probes wait for that)", func(t *testing.T) {
		evs, err := u.client.CoreV1().Events(deploy.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "reason=Unhealthy"})
		if err != nil {
			t.Fatal(err)
		}
		// What startup probes prevent: liveness or readiness probed before
		// the server listens. (A startup probe may fail while its server
		// starts, and a loaded machine may time any probe out: neither is
		// this.)
		for _, e := range evs.Items {
			if !strings.HasPrefix(e.Message, "Startup probe") && strings.Contains(e.Message, "connection refused") {
				t.Errorf("%s %s: %s (%d×)", e.InvolvedObject.Name, e.InvolvedObject.FieldPath, e.Message, e.Count)
			}
		}
	})
	t.Run("the webhook injects the gate's image by digest, built from the source tree into the same layout", func(t *testing.T) {
		d, err := u.client.AppsV1().Deployments(deploy.Namespace).Get(ctx, deploy.Webhook, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--gate-image="+gateRef) {
			t.Errorf("webhook args %q; want --gate-image=%s", args, gateRef)
		}
		if out := u.stderr.String(); !strings.Contains(out, "gate image "+gateRef) || !strings.Contains(out, "the gate podgate-gate built from the source tree") {
			t.Errorf("cluster up does not name the gate's image and how it was built:\n%s", out)
		}
		if out, err := exec.Command(gateImg.Binary, "version").CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "podgate-gate ") {
			t.Errorf("the gate image's program, version: %q, %v; want podgate-gate", out, err)
		}
	})

	t.Run("an unknown host gets the activator's 404 through the front door", func(t *testing.T) {
		code, body, err := u.frontDoorGet("nope.shop.example.com")
		if err != nil || code != http.StatusNotFound || !strings.Contains(body, `no Service "nope" with endpoints in namespace "shop"`) {
			t.Errorf("front door: %d %q %v; want the activator's 404", code, body, err)
		}
	})

	t.Run("a labelled namespace is the only step: an opted-in Deployment gets the gate, its condition written by the node status service, and is served through the front door", func(t *testing.T) {
		// Labelling the namespace is the only step: no RoleBinding, the
		// pods' service account has no right at all.
		u.namespace(t, "shop", map[string]string{"podgate.dev/inject": "enabled"})
		dep := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](2),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: testappSpec(false)},
			},
		}
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(contract.GatePort)}}},
		}
		if _, err := u.client.CoreV1().Services("shop").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		created := time.Now()
		if _, err := u.client.AppsV1().Deployments("shop").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var pods []corev1.Pod
		eventually(t, waitLimit, "two ready pods of web, gated", func() (bool, string) {
			list, err := u.client.CoreV1().Pods("shop").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			if err != nil {
				return false, err.Error()
			}
			pods = list.Items
			var why []string
			for _, p := range pods {
				if ok, w := ready(&p); !ok {
					why = append(why, p.Name+": "+w)
				}
			}
			return len(pods) == 2 && len(why) == 0, fmt.Sprintf("%d pods %v", len(pods), why)
		})
		t.Logf("2 gated pods ready %s after the Deployment was created", time.Since(created).Round(time.Millisecond))
		if rbs, err := u.client.RbacV1().RoleBindings("shop").List(ctx, metav1.ListOptions{}); err != nil || len(rbs.Items) != 0 {
			t.Errorf("RoleBindings in shop: %v %v; want none", rbs, err)
		}
		for _, p := range pods {
			if c := podCondition(&p, contract.ContainersReadyCondition); c == nil || c.Status != corev1.ConditionTrue {
				t.Errorf("pod %s: condition %s %+v, want True", p.Name, contract.ContainersReadyCondition, c)
			}
		}
		for _, p := range pods {
			gated := false
			for _, g := range p.Spec.ReadinessGates {
				gated = gated || g.ConditionType == contract.ContainersReadyCondition
			}
			g := contract.GateContainer(&p.Spec)
			if g == nil || !gated {
				t.Fatalf("pod %s: gate container %v, readiness gate %v; want both injected", p.Name, g != nil, gated)
			}
			if g.Image != gateRef || len(g.Command) != 0 || !slices.Equal(g.Args, []string{"gate"}) {
				t.Errorf("pod %s: gate image %s, command %q, args %q; want %s's entrypoint with [gate]", p.Name, g.Image, g.Command, g.Args, gateRef)
			}
		}
		testGatesRunTheGateImage(t, u, len(pods))
		seen := map[string]int{}
		eventually(t, waitLimit, "both pods answering through the front door", func() (bool, string) {
			code, body, err := u.frontDoorGet("web.shop.example.com")
			if err != nil || code != http.StatusOK {
				return false, fmt.Sprintf("%d %q %v", code, body, err)
			}
			seen[body]++
			return len(seen) == 2, fmt.Sprintf("answers %v", seen)
		})
		for body := range seen {
			if body != pods[0].Name && body != pods[1].Name {
				t.Errorf("answer %q is no pod of web", body)
			}
		}
	})

	t.Run("no container of an injected pod may write a pod's status, with the API server or the node status service", func(t *testing.T) {
		testLeastPrivilegeFromThePod(t, u)
	})

	t.Run("the node status service's own token writes the gates' condition of its node's pods only", func(t *testing.T) {
		testNodeStatusServiceOwnToken(t, u)
	})

	t.Run("a gate that does not reach its node's status service shows as an Event in kubectl describe", func(t *testing.T) {
		testGateNotConnectedShowsInDescribe(t, u, gateRef)
	})

	t.Run("an injected pod's status blames its failing sidecar, and a stopped gate restarts nothing", func(t *testing.T) {
		testInjectedProbesOnACluster(t, u)
	})
}

// testGatesRunTheGateImage checks that the gate processes of the
// cluster's pods (want of them) run the gate image's program, extracted
// from the layout into the node's image cache: podgate-gate, not the
// node's own podgate.
func testGatesRunTheGateImage(t *testing.T, u *upProcess, want int) {
	t.Helper()
	cache := filepath.Join(u.dir, imageCacheDir) + "/"
	var gates []string
	for pid, argv := range u.processes() {
		if len(argv) < 2 || argv[1] != "gate" || (len(argv) > 2 && argv[2] == "wait") {
			continue
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil {
			continue // it ended meanwhile
		}
		gates = append(gates, exe)
		if !strings.HasPrefix(exe, cache) || !strings.HasSuffix(exe, ociimage.BinaryPath) {
			t.Errorf("gate process %d runs %s (%q); want the image's %s from %s", pid, exe, argv, ociimage.BinaryPath, cache)
			continue
		}
		if out, err := exec.Command(exe, "version").CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "podgate-gate ") {
			t.Errorf("gate process %d's program %s, version: %q, %v; want podgate-gate", pid, exe, out, err)
		}
	}
	if len(gates) != want {
		t.Errorf("%d gate processes %q; want one per pod, %d", len(gates), gates, want)
	}
}
