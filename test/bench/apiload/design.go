package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/test/bench/internal/benchenv"
)

const (
	designNode = "node"
	designAPI  = "api"
	// namespace holds the measured pods: not labelled for injection, the
	// pods come injected (`podgate inject`), so both designs run the same
	// pod but for the gate's status source.
	namespace = "apiload"
	// readyLimit bounds the wait for every pod of a size to be Ready.
	readyLimit = 20 * time.Minute
	// systemPods is room on the node for podgate's own pods.
	systemPods = 20
)

// row is one size of one design.
type row struct {
	design       string
	pods         int
	ready        time.Duration
	watches      float64
	reqPerSec    float64
	rampRequests float64
	cpuShare     float64
	rssMB        float64
}

// measureDesign runs every size of one design on a fresh cluster.
func measureDesign(ctx context.Context, o options, design, tmp string) ([]row, error) {
	c, err := startCluster(ctx, o, filepath.Join(tmp, design), o.sizes[len(o.sizes)-1]+systemPods)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	dep, err := injectedDeployment(ctx, o.podgate, design)
	if err != nil {
		return nil, err
	}
	if err := prepareNamespace(ctx, c.k, design); err != nil {
		return nil, err
	}
	if _, err := c.k.AppsV1().Deployments(namespace).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create the Deployment: %w", err)
	}
	var rows []row
	for _, n := range o.sizes {
		r, err := measureSize(ctx, c, design, n, o.window)
		if err != nil {
			return rows, fmt.Errorf("%d pods: %w (log: %s)", n, err, c.log)
		}
		fmt.Fprintf(os.Stderr, "apiload: %s, %d pods: all Ready after %s, %.0f pod watches, %.2f requests/s idle\n",
			design, n, r.ready.Round(100*time.Millisecond), r.watches, r.reqPerSec)
		rows = append(rows, r)
	}
	return rows, nil
}

// measureSize scales the Deployment to n, waits until n pods are Ready,
// and measures the API server over window of idle pods.
func measureSize(ctx context.Context, c *cluster, design string, n int, window time.Duration) (row, error) {
	r := row{design: design, pods: n}
	before, err := scrape(ctx, c.k)
	if err != nil {
		return r, err
	}
	begin := time.Now()
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, n)
	if _, err := c.k.AppsV1().Deployments(namespace).Patch(ctx, "web", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return r, fmt.Errorf("scale: %w", err)
	}
	if err := waitReady(ctx, c, n); err != nil {
		return r, err
	}
	r.ready = time.Since(begin)
	start, err := scrape(ctx, c.k)
	if err != nil {
		return r, err
	}
	r.rampRequests = start.requests - before.requests
	t0 := time.Now()
	select {
	case <-ctx.Done():
		return r, ctx.Err()
	case err := <-c.exited:
		return r, fmt.Errorf("cluster up exited: %v", err)
	case <-time.After(window):
	}
	end, err := scrape(ctx, c.k)
	if err != nil {
		return r, err
	}
	secs := time.Since(t0).Seconds()
	r.watches, r.rssMB = end.podWatches, end.rssBytes/1e6
	r.reqPerSec = (end.requests - start.requests) / secs
	r.cpuShare = (end.cpuSeconds - start.cpuSeconds) / secs
	return r, nil
}

// waitReady waits until n pods of the Deployment are Ready and none
// other is left. It lists once a second: its own requests are a small
// part of what it measures while scaling, and none of the idle window's.
func waitReady(ctx context.Context, c *cluster, n int) error {
	var last string
	err := benchenv.Poll(ctx, fmt.Sprintf("%d pods Ready", n), readyLimit, c.exited, func() (bool, error) {
		pods, err := c.k.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err
		}
		ready := 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && podReady(&p) {
				ready++
			}
		}
		last = fmt.Sprintf("%d of %d pods Ready", ready, len(pods.Items))
		if ready == n && len(pods.Items) == n {
			return true, nil
		}
		time.Sleep(time.Second)
		return false, fmt.Errorf("%s", last)
	})
	return err
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// prepareNamespace creates the namespace and, for the api design, what
// a gate that talks to the API server itself needs: read its pod and
// patch its status.
func prepareNamespace(ctx context.Context, k *kubernetes.Clientset, design string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := k.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace %s: %w", namespace, err)
	}
	// The namespace's default service account: the pods' token.
	if err := benchenv.Poll(ctx, "the default service account", time.Minute, nil, func() (bool, error) {
		_, err := k.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	}); err != nil {
		return err
	}
	if design != designAPI {
		return nil
	}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "apiload:gate"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"pods/status"}, Verbs: []string{"patch"}},
		},
	}
	if _, err := k.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create ClusterRole: %w", err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "apiload:gate", Namespace: namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: namespace}},
	}
	if _, err := k.RbacV1().RoleBindings(namespace).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create RoleBinding: %w", err)
	}
	return nil
}

// workload is the measured Deployment before injection: a test app with a
// readiness probe, no replicas yet.
const workload = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: apiload
spec:
  replicas: 0
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      terminationGracePeriodSeconds: 5
      containers:
      - name: app
        image: ghcr.io/podgate/testapp
        args: [--port, "8080"]
        ports: [{containerPort: 8080}]
        readinessProbe:
          httpGet: {path: /readyz, port: 8080}
          periodSeconds: 10
`

// injectedDeployment is the workload as `podgate inject` writes it for a
// cluster; for the api design its gate reads and writes through the API
// server itself.
func injectedDeployment(ctx context.Context, podgate, design string) (*appsv1.Deployment, error) {
	cmd := exec.CommandContext(ctx, podgate, "inject", "-f", "-")
	cmd.Stdin = strings.NewReader(workload)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("podgate inject: %w: %s", err, stderr.String())
	}
	var dep appsv1.Deployment
	if err := yaml.UnmarshalStrict(bytes.TrimPrefix(out, []byte("---\n")), &dep); err != nil {
		return nil, fmt.Errorf("podgate inject's Deployment: %w", err)
	}
	if design == designAPI {
		if !setGateEnv(&dep.Spec.Template.Spec, contract.EnvStatusSource, contract.StatusSourceKubernetes) {
			return nil, fmt.Errorf("podgate inject's Deployment has no %s to set", contract.EnvStatusSource)
		}
	}
	return &dep, nil
}

// setGateEnv sets name to value in the container that has it.
func setGateEnv(spec *corev1.PodSpec, name, value string) bool {
	for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			if j := slices.IndexFunc(list[i].Env, func(e corev1.EnvVar) bool { return e.Name == name }); j >= 0 {
				list[i].Env[j] = corev1.EnvVar{Name: name, Value: value}
				return true
			}
		}
	}
	return false
}
