package cluster

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/node/images"
)

// clusterStall is how long testInjectedProbesOnACluster stops a gate: more
// than the 6 s after which, when liveness went through the gate, the
// kubelet killed the app and its sidecar.
const clusterStall = 10 * time.Second

// testInjectedProbesOnACluster: an injected Deployment (through the
// webhook) whose sidecar's readiness probe fails. Its probes stay on its
// containers, so the pod's status blames the sidecar (ready=false) and
// not the gate (ready=true; its probe answers for itself), and the gate's
// condition names the sidecar and its probe's message. Then the gate is
// stopped (SIGSTOP) for 10 s: no container restarts, liveness failure
// threshold 1 every second notwithstanding.
func testInjectedProbesOnACluster(t *testing.T, u *upProcess) {
	ctx := t.Context()
	u.namespace(t, "pair", map[string]string{"podgate.dev/inject": "enabled"})
	probe := func(path string, port int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(port)}},
			PeriodSeconds: 1, FailureThreshold: 1,
		}
	}
	live := func(path string, port int32) *corev1.Probe {
		p := probe(path, port)
		p.InitialDelaySeconds = 5
		return p
	}
	spec := corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](2), Containers: []corev1.Container{
		{Name: "app", Image: images.TestappImage, Args: []string{"--port", "8080"}, Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
			ReadinessProbe: probe("/readyz", 8080), LivenessProbe: live("/livez", 8080)},
		{Name: "side", Image: images.TestappImage, Args: []string{"--port", "8081", "--ready-after", "1h"},
			ReadinessProbe: probe("/readyz", 8081), LivenessProbe: live("/livez", 8081)},
	}}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "pair", Namespace: "pair"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pair"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "pair"}}, Spec: spec},
		},
	}
	if _, err := u.client.AppsV1().Deployments("pair").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	status := func(p *corev1.Pod, name string) corev1.ContainerStatus {
		for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			if cs.Name == name {
				return cs
			}
		}
		return corev1.ContainerStatus{}
	}
	var pod corev1.Pod
	eventually(t, waitLimit, "the gate ready, app ready, side not, the condition naming side", func() (bool, string) {
		list, err := u.client.CoreV1().Pods("pair").List(ctx, metav1.ListOptions{LabelSelector: "app=pair"})
		if err != nil || len(list.Items) != 1 {
			return false, fmt.Sprint(len(list.Items), " pods ", err)
		}
		pod = list.Items[0]
		var cond string
		for _, c := range pod.Status.Conditions {
			if string(c.Type) == contract.ContainersReadyCondition {
				cond = string(c.Status) + " " + c.Message
			}
		}
		gate, app, side := status(&pod, contract.GateContainerName), status(&pod, "app"), status(&pod, "side")
		return gate.Ready && app.Ready && !side.Ready && side.State.Running != nil &&
				strings.Contains(cond, "side (readiness probe failed: HTTP probe failed with statuscode: 503)"),
			fmt.Sprintf("gate %v app %v side %v, condition %q", gate.Ready, app.Ready, side.Ready, cond)
	})
	if ok, why := ready(&pod); ok {
		t.Errorf("pod %s Ready (%s) while its sidecar is not", pod.Name, why)
	}

	// The gate of this pod: the process whose environment names it.
	pid := 0
	for p, argv := range u.processes() {
		if len(argv) < 2 || argv[1] != "gate" || (len(argv) > 2 && argv[2] == "wait") {
			continue
		}
		env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p))
		if strings.Contains("\x00"+string(env)+"\x00", "\x00"+contract.EnvServingPod+"="+pod.Name+"\x00") {
			pid = p
		}
	}
	if pid == 0 {
		t.Fatalf("no gate process of pod %s", pod.Name)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	continued := false
	defer func() {
		if !continued {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}()
	time.Sleep(time.Until(stopped.Add(clusterStall))) // the stall is the experiment
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	continued = true
	eventually(t, waitLimit, "the gate ready again", func() (bool, string) {
		p, err := u.client.CoreV1().Pods("pair").Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pod = *p
		return status(p, contract.GateContainerName).Ready, "gate not ready"
	})
	for _, name := range []string{contract.GateContainerName, "app", "side"} {
		if n := status(&pod, name).RestartCount; n != 0 {
			t.Errorf("container %s restarted %d time(s) while the gate was stopped for %s, want none", name, n, clusterStall)
		}
	}
}
