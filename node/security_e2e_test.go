package node

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/node/events"
	"github.com/podgate/podgate/node/images"
	"github.com/podgate/podgate/test/queueenv"
)

// The securityContext under the node agent: the real gate started as
// Knative v0.50.0 starts its queue container, and the kubelet's refusal
// of an image that runs as root.

// needRoot skips where the node has no privileges to give up: CI runs as
// root, as the node of `podgate cluster up` does.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the node switches users and drops capabilities it has")
	}
}

// gateOnlyBinary builds podgate-gate as its image ships it (static) into
// a directory only root may search: the node runs it as the image's user
// all the same.
func gateOnlyBinary(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "root-only")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "podgate-gate")
	build := exec.Command("go", "build", "-o", bin, "github.com/podgate/podgate/cmd/podgate-gate")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// manifest is pod as YAML for load.
func manifest(t *testing.T, pod *corev1.Pod) string {
	t.Helper()
	pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	b, err := yaml.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// queueContainer is Knative's queue container for the gate: every
// variable of queueenv (the pod's name and address from the downward API,
// as Knative writes them), its security context, and podgate's own
// variables for a local node (the upstream on the pod's address, free
// admin and metrics ports).
func queueContainer(userPort int) corev1.Container {
	c := corev1.Container{
		// Knative lists the queue's ports; podgate's validation reserves
		// the gate's own, so the container names none.
		Name: "queue-proxy", Image: contract.GateImage,
		SecurityContext: queueenv.SecurityContext(),
	}
	rev := queueenv.Revision{Namespace: "default", Service: "hello", Configuration: "hello", Revision: "hello-00001",
		UserPort: userPort, ReadinessProbe: `{"tcpSocket":{"port":` + strconv.Itoa(userPort) + `},"successThreshold":1}`}
	fieldRef := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
	}
	for _, kv := range rev.Env() {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "SERVING_POD":
			c.Env = append(c.Env, corev1.EnvVar{Name: k, ValueFrom: fieldRef("metadata.name")})
		case "SERVING_POD_IP":
			c.Env = append(c.Env, corev1.EnvVar{Name: k, ValueFrom: fieldRef("status.podIP")})
		case "HOST_IP":
			c.Env = append(c.Env, corev1.EnvVar{Name: k, ValueFrom: fieldRef("status.hostIP")})
		default:
			c.Env = append(c.Env, corev1.EnvVar{Name: k, Value: v})
		}
	}
	c.Env = append(c.Env,
		corev1.EnvVar{Name: "PODGATE_UPSTREAM_HOST", ValueFrom: fieldRef("status.podIP")},
		corev1.EnvVar{Name: "PODGATE_ADMIN_PORT", Value: "0"},
		corev1.EnvVar{Name: "PODGATE_METRICS_PORT", Value: "0"},
		corev1.EnvVar{Name: "PODGATE_AUTOSCALER_PORT", Value: "0"},
	)
	return c
}

// procStatus is /proc/PID/status of the process whose environment holds
// marker (root reads any process's), as a map.
func procStatus(t *testing.T, program, marker string) map[string]string {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		exe, _ := os.Readlink("/proc/" + e.Name() + "/exe")
		envb, _ := os.ReadFile("/proc/" + e.Name() + "/environ")
		if exe != program || !strings.Contains("\x00"+string(envb)+"\x00", "\x00"+marker+"\x00") {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{"pid": e.Name()}
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok {
				m[k] = strings.Join(strings.Fields(v), " ")
			}
		}
		return m
	}
	t.Fatalf("no process of %s with %s in its environment", program, marker)
	return nil
}

func TestTheGateServesUnderKnativesSecurityContext(t *testing.T) {
	needRoot(t)
	t.Parallel()
	gate := gateOnlyBinary(t)
	im, err := images.Default()
	if err != nil {
		t.Fatal(err)
	}
	im.Set(contract.GateImage, gate)
	h := newHarness(t, func(o *Options) { o.Images = im })
	h.forceShutdown()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "kqp"},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr(int64(1)),
			Containers: []corev1.Container{
				{Name: "user-container", Image: images.TestappImage, Ports: []corev1.ContainerPort{{ContainerPort: 8080}}},
				queueContainer(8080),
			},
		},
	}
	h.start(manifest(t, pod))
	p := h.waitPod("kqp", "both containers running", func(p *corev1.Pod) bool {
		return p.Status.PodIP != "" && containerStatus(p, "queue-proxy").State.Running != nil &&
			containerStatus(p, "user-container").State.Running != nil
	})

	// Through the gate's serving port to the app, as the activator sends.
	url := "http://" + p.Status.PodIP + ":" + strconv.Itoa(queueenv.ServingPort) + "/"
	deadline := time.Now().Add(waitLimit)
	for {
		code, body, err := get(url)
		if err == nil && code == 200 && strings.TrimSpace(body) == "kqp" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s through the gate: %d %q %v; want 200 from the app (its hostname, kqp)", url, code, body, err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// The gate runs as its image's user, with nothing to escalate to.
	st := procStatus(t, gate, "SERVING_POD=kqp")
	for k, want := range map[string]string{
		"Uid": "65532 65532 65532 65532", "Gid": "65532 65532 65532 65532",
		"CapEff": "0000000000000000", "CapPrm": "0000000000000000", "CapBnd": "0000000000000000",
		"NoNewPrivs": "1",
	} {
		if st[k] != want {
			t.Errorf("the gate's %s: %q, want %q", k, st[k], want)
		}
	}
	// Its view of this machine's root filesystem is read-only; the
	// node's is not.
	if opts := rootMountOptions(t, st["pid"]); !strings.HasPrefix(opts, "ro,") {
		t.Errorf("the gate's / is mounted %q, want ro", opts)
	}
	if opts := rootMountOptions(t, "self"); strings.HasPrefix(opts, "ro,") {
		t.Errorf("the node's own / turned read-only: %q", opts)
	}
	// What the node does not enforce, it says.
	h.waitEvent("kqp", events.ReasonSecurityContextNotEnforced, "seccompProfile RuntimeDefault is not enforced")
}

// rootImage is an images.Store of images whose config names no user: a
// container runtime runs them as root.
type rootImage map[string][]string

func (s rootImage) Entrypoint(image string) ([]string, []string, string, bool, error) {
	ep, ok := s[image]
	return ep, nil, "/bin/sh", ok, nil
}

func (s rootImage) User(image string) (string, bool, error) {
	_, ok := s[image]
	return "", ok, nil
}

func TestAnImageThatRunsAsRootIsRefusedUnderRunAsNonRoot(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(o *Options) {
		o.Images = images.Map{Store: rootImage{"example.test/root:v1": {"/bin/sh", "-c", "echo started; exec sleep 600"}}}
	})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "rooted"},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr(int64(1)),
			Containers: []corev1.Container{{Name: "app", Image: "example.test/root:v1",
				SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptr(true)}}},
		},
	}
	h.start(manifest(t, pod))
	p := h.waitPod("rooted", "app waiting with CreateContainerConfigError", func(p *corev1.Pod) bool {
		w := containerStatus(p, "app").State.Waiting
		return w != nil && w.Reason == "CreateContainerConfigError"
	})
	want := `container has runAsNonRoot and image will run as root (pod: "rooted_default(` + string(p.UID) + `)", container: app)`
	if got := containerStatus(p, "app").State.Waiting.Message; got != want {
		t.Errorf("waiting message %q\nwant                %q", got, want)
	}
	h.waitEvent("rooted", events.ReasonFailed, "Error: "+want)
	if n := h.outputCount("rooted", "started"); n != 0 {
		t.Errorf("the refused container ran (%d lines of its output)", n)
	}
}

// rootMountOptions are the mount options of / as process pid sees it.
func rootMountOptions(t *testing.T, pid string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + pid + "/mounts")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 4 && f[1] == "/" {
			return f[3]
		}
	}
	t.Fatalf("no / in /proc/%s/mounts", pid)
	return ""
}
