package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/podgate/podgate/internal/k8sbin"
	"github.com/podgate/podgate/node/images"
)

// testappSpec is a pod spec of the test app on :8080 with probes every
// second; liveness only when live is set (it restarts at the first
// failure, after a startup probe).
func testappSpec(live bool) corev1.PodSpec {
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(8080)}},
			PeriodSeconds: 1, FailureThreshold: 1,
		}
	}
	c := corev1.Container{
		Name: "app", Image: images.TestappImage, Args: []string{"--port", "8080"},
		Ports:          []corev1.ContainerPort{{ContainerPort: 8080}},
		ReadinessProbe: probe("/readyz"),
	}
	if live {
		c.StartupProbe = probe("/readyz")
		c.StartupProbe.FailureThreshold = 60
		c.LivenessProbe = probe("/livez")
	}
	return corev1.PodSpec{Containers: []corev1.Container{c}, TerminationGracePeriodSeconds: ptr.To[int64](5)}
}

func service(name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
}

// endpoints are a Service's endpoints, from the EndpointSlices the
// controller manager's EndpointSlice controller writes: address → ready.
func (u *upProcess) endpoints(svc string) (map[string]bool, map[string]string, error) {
	list, err := u.client.DiscoveryV1().EndpointSlices("default").List(context.Background(),
		metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
	if err != nil {
		return nil, nil, err
	}
	ready, pods := map[string]bool{}, map[string]string{}
	for _, s := range list.Items {
		for _, ep := range s.Endpoints {
			for _, a := range ep.Addresses {
				ready[a] = ep.Conditions.Ready != nil && *ep.Conditions.Ready
				if ep.TargetRef != nil {
					pods[a] = ep.TargetRef.Name
				}
			}
		}
	}
	return ready, pods, nil
}

// waitEndpoints waits until the Service has exactly n endpoints, all
// ready, and returns their addresses and pods.
func (u *upProcess) waitEndpoints(svc string, n int) map[string]string {
	u.t.Helper()
	var pods map[string]string
	eventually(u.t, waitLimit, fmt.Sprintf("%d ready endpoints of %s", n, svc), func() (bool, string) {
		ready, p, err := u.endpoints(svc)
		if err != nil {
			return false, err.Error()
		}
		pods = p
		count := 0
		for _, r := range ready {
			if r {
				count++
			}
		}
		return count == n && len(ready) == n, fmt.Sprintf("endpoints %v", ready)
	})
	return pods
}

func TestClusterUpRunsARealCluster(t *testing.T) {
	const cidr = "10.250.1.0/24"
	u := startUp(t, cidr)
	t.Logf("cluster up: kubeconfig written %s after the start", time.Since(u.began).Round(time.Millisecond))
	ctx := context.Background()
	core := u.client.CoreV1()
	prefix := netip.MustParsePrefix(cidr)

	t.Run("kubectl get nodes shows the node Ready, at the node's address", func(t *testing.T) {
		kubectl, err := k8sbin.Path(k8sbin.Kubectl)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(kubectl, "get", "nodes", "--no-headers", "-o", "custom-columns=NAME:.metadata.name,READY:.status.conditions[?(@.type=='Ready')].status,IP:.status.addresses[0].address,CIDR:.spec.podCIDR")
		cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(u.dir, KubeconfigFile))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl get nodes: %v\n%s", err, out)
		}
		want := []string{DefaultNodeName, "True", "10.250.1.1", cidr}
		if got := strings.Fields(string(out)); !slices.Equal(got, want) {
			t.Errorf("kubectl get nodes: %q, want %q", got, want)
		}
		if !strings.HasPrefix(u.config.Host, "https://127.0.0.1:") {
			t.Errorf("the kubeconfig's server %s, want the host's loopback forward", u.config.Host)
		}
	})

	t.Run("a second cluster up in the same directory is refused", func(t *testing.T) {
		out, err := exec.Command(podgateBin, "cluster", "up", "--dir", u.dir, "--pod-cidr", "10.250.9.0/24").CombinedOutput()
		if code := exitCode(err); code != 1 || !strings.Contains(string(out), "a cluster already runs in "+u.dir) {
			t.Errorf("exit %d, %s; want 1 and a cluster already runs", code, out)
		}
	})

	var web map[string]string
	t.Run("a Deployment of 2 replicas gets 2 ready endpoints at pod IPs, both serving 0.0.0.0:8080", func(t *testing.T) {
		dep := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](2),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: testappSpec(false)},
			},
		}
		if _, err := core.Services("default").Create(ctx, service("web"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		created := time.Now()
		if _, err := u.client.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		web = u.waitEndpoints("web", 2)
		t.Logf("2 ready endpoints %s after the Deployment was created: %v", time.Since(created).Round(time.Millisecond), web)
		for ip, pod := range web {
			if a, err := netip.ParseAddr(ip); err != nil || !prefix.Contains(a) || a.IsLoopback() || a == netip.MustParseAddr("10.250.1.1") {
				t.Errorf("endpoint %s of pod %s: want a pod address of %s", ip, pod, cidr)
			}
			code, body, err := u.get(ip, "/")
			if err != nil || code != 200 || !strings.Contains(body, pod) {
				t.Errorf("GET http://%s:8080/ = %d %q %v; want pod %s answering", ip, code, body, err, pod)
			}
		}
	})

	t.Run("a deleted pod is replaced by the ReplicaSet controller", func(t *testing.T) {
		if len(web) != 2 {
			t.Fatal("the Deployment of the previous subtest did not come up")
		}
		var victim string
		for _, pod := range web {
			victim = pod
			break
		}
		if err := core.Pods("default").Delete(ctx, victim, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, waitLimit, "a replacement endpoint", func() (bool, string) {
			ready, pods, err := u.endpoints("web")
			if err != nil {
				return false, err.Error()
			}
			n := 0
			for ip, r := range ready {
				if r && pods[ip] != victim {
					n++
				}
			}
			return n == 2, fmt.Sprintf("endpoints %v of %v", ready, pods)
		})
		eventually(t, waitLimit, victim+" gone", func() (bool, string) {
			_, err := core.Pods("default").Get(ctx, victim, metav1.GetOptions{})
			return err != nil, "still there"
		})
	})

	t.Run("a pod reaches the API server as its service account", func(t *testing.T) {
		kubectl, err := k8sbin.Path(k8sbin.Kubectl)
		if err != nil {
			t.Fatal(err)
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "who", Namespace: "default"},
			Spec: corev1.PodSpec{
				TerminationGracePeriodSeconds: ptr.To[int64](1),
				Containers: []corev1.Container{{Name: "c", Image: "busybox", Command: []string{"/bin/sh", "-c",
					fmt.Sprintf(`echo "whoami $(%s auth whoami -o json | tr -d '\n ')"; exec sleep 600`, kubectl)}}},
			},
		}
		if _, err := core.Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var review authenticationv1.SelfSubjectReview
		if err := json.Unmarshal([]byte(u.outputLine("who", "c", "whoami ")), &review); err != nil {
			t.Fatalf("kubectl auth whoami in the pod: %v", err)
		}
		user := review.Status.UserInfo
		if user.Username != "system:serviceaccount:default:default" {
			t.Errorf("the pod is %q, want system:serviceaccount:default:default", user.Username)
		}
		if got := user.Extra["authentication.kubernetes.io/pod-name"]; !slices.Equal(got, []string{"who"}) {
			t.Errorf("the token's pod-name %v, want [who]", got)
		}
	})

	t.Run("a pod reads a configMap volume and reaches the API server by its in-cluster config", func(t *testing.T) {
		kubectl, err := k8sbin.Path(k8sbin.Kubectl)
		if err != nil {
			t.Fatal(err)
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "greet", Namespace: "default"}, Data: map[string]string{"msg": "hi"}}
		if _, err := core.ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// Without $KUBECONFIG, kubectl (client-go's loading rules) takes the
		// in-cluster configuration: the files at
		// /var/run/secrets/kubernetes.io/serviceaccount and
		// KUBERNETES_SERVICE_HOST/PORT.
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "incluster", Namespace: "default"},
			Spec: corev1.PodSpec{
				TerminationGracePeriodSeconds: ptr.To[int64](1),
				Volumes: []corev1.Volume{{Name: "greet", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "greet"}}}}},
				Containers: []corev1.Container{{Name: "c", Image: "busybox",
					VolumeMounts: []corev1.VolumeMount{{Name: "greet", MountPath: "/etc/podgate-greet", ReadOnly: true}},
					Command: []string{"/bin/sh", "-c",
						fmt.Sprintf(`echo "msg $(cat /etc/podgate-greet/msg)"; echo "incluster $(env -u KUBECONFIG HOME=/nonexistent %s auth whoami -o json | tr -d '\n ')"; exec sleep 600`, kubectl)}}},
			},
		}
		if _, err := core.Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := u.outputLine("incluster", "c", "msg "); got != "hi" {
			t.Errorf("the configMap's file in the pod: %q, want hi", got)
		}
		var review authenticationv1.SelfSubjectReview
		if err := json.Unmarshal([]byte(u.outputLine("incluster", "c", "incluster ")), &review); err != nil {
			t.Fatalf("kubectl auth whoami by the in-cluster config: %v", err)
		}
		if got := review.Status.UserInfo.Extra["authentication.kubernetes.io/pod-name"]; !slices.Equal(got, []string{"incluster"}) {
			t.Errorf("the in-cluster token's pod-name %v, want [incluster]", got)
		}
		if _, err := os.Stat("/etc/podgate-greet"); err == nil {
			t.Error("/etc/podgate-greet exists on the host: the mount path is the container's only")
		}
	})

	t.Run("a liveness failure restarts the container with a Killing event", func(t *testing.T) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "live", Namespace: "default"}, Spec: testappSpec(true)}
		if _, err := core.Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p := u.waitPod("live", "Ready", ready)
		if code, _, err := u.get(p.Status.PodIP, "/toggleLive?set=false"); err != nil || code != 200 {
			t.Fatalf("toggle liveness: %d %v", code, err)
		}
		u.waitPod("live", "restarted", func(p *corev1.Pod) (bool, string) {
			n := p.Status.ContainerStatuses[0].RestartCount
			return n >= 1, fmt.Sprintf("restartCount %d", n)
		})
		eventually(t, waitLimit, "a Killing event through the events API", func() (bool, string) {
			evs, err := core.Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=live,reason=Killing"})
			if err != nil {
				return false, err.Error()
			}
			for _, ev := range evs.Items {
				if strings.Contains(ev.Message, "failed liveness probe") && ev.Source.Host == DefaultNodeName {
					return true, ""
				}
			}
			return false, fmt.Sprintf("%d Killing events, none for the liveness probe", len(evs.Items))
		})
	})

	t.Run("a container that would run as root under runAsNonRoot is refused with the kubelet's message", func(t *testing.T) {
		spec := testappSpec(false)
		root, nonRoot := int64(0), true
		spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: &nonRoot}
		spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: &root}
		created, err := core.Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "rooted", Namespace: "default"}, Spec: spec}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := spec.Containers[0].Name
		want := fmt.Sprintf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", "rooted_default("+string(created.UID)+")", c)
		u.waitPod("rooted", "waiting with CreateContainerConfigError", func(p *corev1.Pod) (bool, string) {
			if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Waiting == nil {
				return false, fmt.Sprintf("phase %s, statuses %v", p.Status.Phase, p.Status.ContainerStatuses)
			}
			w := p.Status.ContainerStatuses[0].State.Waiting
			return w.Reason == "CreateContainerConfigError" && w.Message == want, fmt.Sprintf("waiting %s: %s", w.Reason, w.Message)
		})
		eventually(t, waitLimit, "a Failed event with the message", func() (bool, string) {
			evs, err := core.Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=rooted,reason=Failed"})
			if err != nil {
				return false, err.Error()
			}
			for _, ev := range evs.Items {
				if ev.Message == "Error: "+want {
					return true, ""
				}
			}
			return false, fmt.Sprintf("%d Failed events, none saying %q", len(evs.Items), "Error: "+want)
		})
	})

	t.Run("a readiness failure takes the endpoint out of service until it passes again", func(t *testing.T) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "rd", Namespace: "default", Labels: map[string]string{"app": "rd"}}, Spec: testappSpec(false)}
		if _, err := core.Services("default").Create(ctx, service("rd"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := core.Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		ip := ""
		for a := range u.waitEndpoints("rd", 1) {
			ip = a
		}
		for _, step := range []struct {
			set  string
			want bool
		}{{"false", false}, {"true", true}} {
			if code, _, err := u.get(ip, "/toggleReady?set="+step.set); err != nil || code != 200 {
				t.Fatalf("toggle readiness: %d %v", code, err)
			}
			eventually(t, waitLimit, fmt.Sprintf("endpoint %s ready=%v", ip, step.want), func() (bool, string) {
				r, _, err := u.endpoints("rd")
				if err != nil {
					return false, err.Error()
				}
				got, ok := r[ip]
				return ok && got == step.want, fmt.Sprintf("endpoints %v", r)
			})
		}
	})
}
