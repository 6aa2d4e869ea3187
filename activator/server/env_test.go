package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/podgate/podgate/admission/inject"
	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/internal/k8sbin"
	"github.com/podgate/podgate/kube/controlplane"
	"github.com/podgate/podgate/node/images"
	"github.com/podgate/podgate/node/kube"
	"github.com/podgate/podgate/test/syncbuf"
)

// The cluster these tests share: one control plane, one podgate node
// running pods on the host's loopback, namespace shop with Service web
// over two gated test-app pods.
const (
	nodeName = "node-1"
	// podCIDR is this package's own range, so its tests run beside
	// `podgate run` and the other packages' tests.
	podCIDR = "127.3.40.0/24"
	testNS  = "shop"
	service = "web"
	// mirrorManager is the managed-by label of the test's EndpointSlice:
	// the EndpointSlice controller leaves slices managed by another
	// controller alone (and a Service without a selector gets none of
	// its own).
	mirrorManager = "server-test"
)

// env is the shared cluster.
type env struct {
	dir   string
	cp    *controlplane.ControlPlane
	admin *rest.Config
	cs    kubernetes.Interface
	// activatorRest is kube/deploy/base's podgate-activator service account;
	// gateRest is shop's default service account, which gateRole grants
	// what this test's gates need.
	activatorRest, gateRest *rest.Config
	gateKubeconfig          string

	log       syncbuf.Buffer // the node's, the activators' and the mirror's
	stopNode  context.CancelFunc
	nodeDone  chan error
	mirror    *sliceMirror
	stopOther context.CancelFunc
	others    sync.WaitGroup

	act     *Server // the activator the tests share
	stopAct context.CancelFunc
}

var shared struct {
	once sync.Once
	env  *env
	err  error
}

// sharedEnv starts the cluster on first use; a failed start fails every
// test that needs it, with the same error.
func sharedEnv(t testing.TB) *env {
	t.Helper()
	shared.once.Do(func() {
		begin := time.Now()
		shared.env, shared.err = startEnv()
		if shared.err == nil {
			fmt.Fprintf(os.Stderr, "activator server tests: cluster with 2 ready pods and the activator in %s\n", time.Since(begin).Round(time.Millisecond))
		}
	})
	if shared.err != nil {
		t.Fatalf("shared cluster: %v", shared.err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log of the node, the activators and the slice mirror:\n%s", shared.env.log.String())
		}
	})
	return shared.env
}

func stopShared() error {
	if shared.env == nil {
		return nil
	}
	return shared.env.stop()
}

// startEnv is long because it is a list of steps, each a few lines.
func startEnv() (e *env, err error) {
	e = &env{nodeDone: make(chan error, 1)}
	if e.dir, err = os.MkdirTemp("", "server-test-"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.stop())
			if log := e.log.String(); log != "" {
				err = fmt.Errorf("%w\nlog:\n%s", err, log)
			}
		}
	}()
	if e.cp, err = controlplane.Start(context.Background(), controlplane.Options{Dir: filepath.Join(e.dir, "cp")}); err != nil {
		return e, err
	}
	e.admin = e.cp.AdminConfig()
	e.cs = kubernetes.NewForConfigOrDie(e.admin)
	ctx := context.Background()
	if err = e.applyBase(); err != nil {
		return e, err
	}
	if _, err = e.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS}}, metav1.CreateOptions{}); err != nil {
		return e, err
	}
	if _, err = e.kubectl([]byte(gateRole), "apply", "-f", "-"); err != nil {
		return e, err
	}
	if e.activatorRest, err = e.tokenConfig("podgate-system", "podgate-activator"); err != nil {
		return e, err
	}
	if e.gateRest, err = e.tokenConfig(testNS, "default"); err != nil {
		return e, err
	}
	if e.gateKubeconfig, err = writeKubeconfig(filepath.Join(e.dir, "gate.kubeconfig"), e.gateRest); err != nil {
		return e, err
	}
	if err = e.startNode(); err != nil {
		return e, err
	}
	if _, err = e.cs.CoreV1().Services(testNS).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: service, Namespace: testNS},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}, metav1.CreateOptions{}); err != nil {
		return e, err
	}
	otherCtx, stop := context.WithCancel(context.Background())
	e.stopOther = stop
	e.mirror = newSliceMirror(e.cs, testNS, service, "app="+service, &e.log)
	e.others.Go(func() { e.mirror.run(otherCtx) })
	for _, name := range []string{"web-a", "web-b"} {
		if err = e.createPod(name); err != nil {
			return e, err
		}
	}
	if err = e.waitEndpoints(map[string]bool{"web-a": true, "web-b": true}); err != nil {
		return e, err
	}
	if e.act, e.stopAct, err = e.startActivator(Config{}); err != nil {
		return e, err
	}
	return e, nil
}

// stop ends everything in the order that lets each part finish: the
// activators, the mirror, the node (it deletes its pods through the API
// server), the control plane.
func (e *env) stop() error {
	var errs []error
	if e.stopAct != nil {
		e.stopAct()
		<-e.act.Done()
	}
	if e.stopOther != nil {
		e.stopOther()
		e.others.Wait()
	}
	if e.stopNode != nil {
		e.stopNode()
		select {
		case err := <-e.nodeDone:
			if err != nil {
				errs = append(errs, fmt.Errorf("node: %w", err))
			}
		case <-time.After(time.Minute):
			errs = append(errs, errors.New("the node did not stop within a minute"))
		}
	}
	if e.cp != nil {
		if err := e.cp.Stop(); err != nil {
			errs = append(errs, err)
		}
	}
	if e.dir != "" {
		errs = append(errs, os.RemoveAll(e.dir))
	}
	return errors.Join(errs...)
}

// kubectl runs kubectl as the cluster's admin.
func (e *env) kubectl(stdin []byte, args ...string) ([]byte, error) {
	bin, err := k8sbin.Path(k8sbin.Kubectl)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, append([]string{"--kubeconfig", e.cp.AdminKubeconfig()}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// kustomize builds dir with kubectl's kustomize into one object per
// document.
func kustomize(dir string) ([]map[string]any, error) {
	bin, err := k8sbin.Path(k8sbin.Kubectl)
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "kustomize", dir)
	cmd.Stderr = &stderr
	built, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kubectl kustomize %s: %w\n%s", dir, err, stderr.String())
	}
	var objs []map[string]any
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(built), 4096)
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, fmt.Errorf("kubectl kustomize %s: %w", dir, err)
		}
		objs = append(objs, obj)
	}
}

// applyBase applies kube/deploy/base as kustomize builds it, but for its
// Deployments and DaemonSet (the podgate node would run them: the
// activator runs in this process instead, and this test's gates ask the
// API server, not a node status service) and the webhook configurations
// (no webhook runs here; they concern opted-in objects only anyway). The
// node status service's policy is applied: it concerns that service's
// identity only (TestNodeStatusPolicy).
func (e *env) applyBase() error {
	objs, err := kustomize("../../kube/deploy/base")
	if err != nil {
		return err
	}
	var docs [][]byte
	for _, o := range objs {
		switch o["kind"] {
		case "Deployment", "DaemonSet", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
			continue
		}
		b, err := yaml.Marshal(o)
		if err != nil {
			return err
		}
		docs = append(docs, b)
	}
	_, err = e.kubectl(bytes.Join(docs, []byte("---\n")), "apply", "-f", "-")
	return err
}

// gateRole grants shop's default service account what this test's gates
// need to read their pods from the API server and write their condition
// (PODGATE_STATUS_SOURCE=kubernetes): this node runs no node status
// service, which is what an injected gate asks on a cluster, with no
// right of its own (kube/deploy/base/node-status).
const gateRole = `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: test-gate, namespace: shop}
rules:
- {apiGroups: [""], resources: [pods], verbs: [get, list, watch]}
- {apiGroups: [""], resources: [pods/status], verbs: [patch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: test-gate, namespace: shop}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: test-gate}
subjects:
- {kind: ServiceAccount, name: default, namespace: shop}
`

// tokenConfig is a client config with a token of the service account;
// the service-account controller makes a namespace's "default" a moment
// after the namespace, so a missing one is asked for again.
func (e *env) tokenConfig(namespace, name string) (*rest.Config, error) {
	var tok *authenticationv1.TokenRequest
	err := poll(time.Minute, func() (bool, error) {
		var err error
		tok, err = e.cs.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), name,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
		return err == nil, err
	})
	if err != nil {
		return nil, fmt.Errorf("token of %s/%s: %w", namespace, name, err)
	}
	return &rest.Config{Host: e.admin.Host, BearerToken: tok.Status.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: e.admin.CAData}, QPS: 50, Burst: 100}, nil
}

// writeKubeconfig writes cfg's server, CA and token as a kubeconfig.
func writeKubeconfig(path string, cfg *rest.Config) (string, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "sa"}
	kc.CurrentContext = "test"
	return path, clientcmd.WriteToFile(*kc, path)
}

func (e *env) startNode() error {
	kubeconfig, err := e.cp.NodeKubeconfig(nodeName)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.stopNode = cancel
	ready := make(chan struct{})
	go func() {
		e.nodeDone <- kube.Run(ctx, kube.Config{
			Kubeconfig: kubeconfig, NodeName: nodeName, PodCIDR: podCIDR,
			Output: &e.log, Logger: slog.New(slog.NewTextHandler(&e.log, nil)),
			Ready: func() { close(ready) },
		})
	}()
	select {
	case <-ready:
		return nil
	case err := <-e.nodeDone:
		e.stopNode = nil
		return fmt.Errorf("node: %w", err)
	case <-time.After(time.Minute):
		return errors.New("the node was not ready within a minute")
	}
}

// gatedPod is a test-app pod in namespace shop with podgate's gate,
// injected as `podgate inject` does for this node, where pods share the
// host's network, each on a loopback address of its own (so the gate
// dials its pod IP, as `podgate run`'s gates do). Two things differ from
// that injection, as on a cluster: the gate reads its pod from the API
// server (PODGATE_STATUS_SOURCE=kubernetes) as shop's default service
// account, through a kubeconfig since this node mounts no token, and
// does not expect a single router.
func (e *env) gatedPod(name string) (*corev1.Pod, error) {
	return e.gatedPodRouted(name, false)
}

// gatedPodRouted is gatedPod; with onlyRouter its gate keeps
// PODGATE_ONLY_ROUTER=activator, as `podgate cluster up`'s webhook injects
// it.
func (e *env) gatedPodRouted(name string, onlyRouter bool) (*corev1.Pod, error) {
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %[1]s
  namespace: %[2]s
  labels: {app: %[3]s}
spec:
  nodeName: %[4]s
  terminationGracePeriodSeconds: 10
  containers:
  - name: app
    image: %[5]s
    args: [--port, "8080", --name, %[1]s]
    ports: [{name: http, containerPort: 8080}]
    readinessProbe:
      httpGet: {path: /readyz, port: 8080}
      periodSeconds: 1
      failureThreshold: 1
`, name, testNS, service, nodeName, images.TestappImage)
	m, err := workload.Load(strings.NewReader(manifest), name+".yaml")
	if err != nil {
		return nil, err
	}
	w, err := inject.Gate(m.Workloads[0], inject.Options{Local: true})
	if err != nil {
		return nil, err
	}
	pod := &corev1.Pod{ObjectMeta: *w.Template.ObjectMeta.DeepCopy(), Spec: *w.Template.Spec.DeepCopy()}
	pod.Name, pod.Namespace = name, testNS
	gate := contract.GateContainer(&pod.Spec)
	if gate == nil {
		return nil, errors.New("no gate injected")
	}
	var env []corev1.EnvVar
	for _, v := range gate.Env {
		switch v.Name {
		case contract.EnvStatusSource:
			v.Value = contract.StatusSourceKubernetes
		case contract.EnvOnlyRouter:
			if !onlyRouter {
				continue
			}
		}
		env = append(env, v)
	}
	gate.Env = append(env, corev1.EnvVar{Name: "KUBECONFIG", Value: e.gateKubeconfig})
	return pod, nil
}

func (e *env) createPod(name string) error {
	pod, err := e.gatedPod(name)
	if err != nil {
		return err
	}
	_, err = e.cs.CoreV1().Pods(testNS).Create(context.Background(), pod, metav1.CreateOptions{})
	return err
}

// waitEndpoints waits until the slice lists exactly these pods with these
// ready conditions.
func (e *env) waitEndpoints(want map[string]bool) error {
	var last string
	err := poll(time.Minute, func() (bool, error) {
		got := e.mirror.written()
		last = fmt.Sprint(got)
		if len(got) != len(want) {
			return false, nil
		}
		for k, v := range want {
			if r, ok := got[k]; !ok || r != v {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("endpoints %v: %w (last written %s)", want, err, last)
	}
	return nil
}

// startActivator starts an activator as kube/deploy/base's service account,
// on free loopback ports, reaching the pods through dialPod; cfg's zero
// fields take the test defaults.
func (e *env) startActivator(cfg Config) (*Server, context.CancelFunc, error) {
	if cfg.Rest == nil {
		cfg.Rest = e.activatorRest
	}
	cfg.Listen, cfg.MetricsListen, cfg.Dial = "127.0.0.1:0", "127.0.0.1:0", dialPod
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = time.Minute
	}
	cfg.Logger = slog.New(slog.NewTextHandler(&e.log, nil))
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Start(ctx, cfg)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	stop := func() { cancel(); <-s.Done() }
	if err := poll(time.Minute, func() (bool, error) { return s.Ready(), nil }); err != nil {
		stop()
		return nil, nil, fmt.Errorf("activator not ready: %w", err)
	}
	return s, stop, nil
}

// podAddress is the address the test's EndpointSlice lists for a pod IP of
// this node: the API server refuses loopback addresses in EndpointSlices,
// so 127.3.40.N is written as 10.244.40.N, and dialPod, the activators'
// dialer, takes it back. No connection ever leaves loopback: dialPod
// refuses any address it did not make.
func podAddress(podIP string) (string, error) {
	ip := net.ParseIP(podIP).To4()
	if ip == nil || ip[0] != 127 || ip[1] != 3 {
		return "", fmt.Errorf("pod IP %q is not in %s", podIP, podCIDR)
	}
	return fmt.Sprintf("10.244.%d.%d", ip[2], ip[3]), nil
}

func dialPod(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ip := net.ParseIP(host).To4()
	var d net.Dialer
	if ip != nil && ip[0] == 127 && ip[1] == 3 {
		// A pod IP as the Pod's status has it (the activator's gates of
		// pods in no open target, read from the Pod informer).
		return d.DialContext(ctx, network, addr)
	}
	if ip == nil || ip[0] != 10 || ip[1] != 244 {
		return nil, fmt.Errorf("dialPod: %s is no pod address of this test", addr)
	}
	return d.DialContext(ctx, network, net.JoinHostPort(fmt.Sprintf("127.3.%d.%d", ip[2], ip[3]), port))
}

// sliceMirror plays the EndpointSlice controller for one Service without
// a selector, over the pods a label selector picks: one slice, an
// endpoint per pod with an IP, ready = the pod's Ready condition and not
// deleting, serving = Ready, terminating = deleting, as the controller
// writes them. Tests can pin an endpoint's ready condition to see the
// activator follow the slice and not the pod.
type sliceMirror struct {
	cs                         kubernetes.Interface
	namespace, service, labels string
	log                        io.Writer

	mu      sync.Mutex
	pinned  map[string]bool
	last    map[string]bool // pod → ready, as last written
	trigger chan struct{}
}

func newSliceMirror(cs kubernetes.Interface, namespace, service, labels string, log io.Writer) *sliceMirror {
	return &sliceMirror{cs: cs, namespace: namespace, service: service, labels: labels, log: log,
		pinned: map[string]bool{}, trigger: make(chan struct{}, 1)}
}

// pin holds pod's endpoint at ready whatever the pod says; unpin lets it
// follow the pod again.
func (m *sliceMirror) pin(pod string, ready bool) { m.set(func() { m.pinned[pod] = ready }) }
func (m *sliceMirror) unpin(pod string)           { m.set(func() { delete(m.pinned, pod) }) }

func (m *sliceMirror) set(f func()) {
	m.mu.Lock()
	f()
	m.mu.Unlock()
	select {
	case m.trigger <- struct{}{}:
	default:
	}
}

// written is pod → ready as the slice was last written.
func (m *sliceMirror) written() map[string]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]bool, len(m.last))
	for k, v := range m.last {
		out[k] = v
	}
	return out
}

// run writes the slice from the pods: after every pod event (a watch) and
// every pin, until ctx ends.
func (m *sliceMirror) run(ctx context.Context) {
	for ctx.Err() == nil {
		w, err := m.cs.CoreV1().Pods(m.namespace).Watch(ctx, metav1.ListOptions{LabelSelector: m.labels})
		if err != nil {
			fmt.Fprintf(m.log, "slice mirror: watch: %v\n", err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		m.sync(ctx)
	events:
		for {
			select {
			case <-ctx.Done():
				w.Stop()
				return
			case _, ok := <-w.ResultChan():
				if !ok {
					break events
				}
			case <-m.trigger:
			}
			m.sync(ctx)
		}
	}
}

func (m *sliceMirror) sync(ctx context.Context) {
	pods, err := m.cs.CoreV1().Pods(m.namespace).List(ctx, metav1.ListOptions{LabelSelector: m.labels})
	if err != nil {
		fmt.Fprintf(m.log, "slice mirror: list: %v\n", err)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: m.service + "-mirror", Namespace: m.namespace, Labels: map[string]string{
			discoveryv1.LabelServiceName: m.service, discoveryv1.LabelManagedBy: mirrorManager,
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	written := map[string]bool{}
	for _, p := range pods.Items {
		addr, err := podAddress(p.Status.PodIP)
		if err != nil {
			continue // no IP yet
		}
		podReady := false
		for _, c := range p.Status.Conditions {
			podReady = podReady || c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
		}
		deleting := p.DeletionTimestamp != nil
		ready := podReady && !deleting
		if pinned, ok := m.pinned[p.Name]; ok {
			ready = pinned
		}
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{addr},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready), Serving: ptr.To(podReady), Terminating: ptr.To(deleting)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID},
			NodeName:   ptr.To(p.Spec.NodeName),
		})
		written[p.Name] = ready
	}
	slices := m.cs.DiscoveryV1().EndpointSlices(m.namespace)
	cur, err := slices.Get(ctx, slice.Name, metav1.GetOptions{})
	if err == nil {
		slice.ResourceVersion = cur.ResourceVersion
		_, err = slices.Update(ctx, slice, metav1.UpdateOptions{})
	} else {
		_, err = slices.Create(ctx, slice, metav1.CreateOptions{})
	}
	if err != nil {
		fmt.Fprintf(m.log, "slice mirror: write: %v\n", err)
		select { // again at once
		case m.trigger <- struct{}{}:
		default:
		}
		return
	}
	m.last = written
}

// poll calls cond every 20 ms until it holds, returns an error, or
// timeout passes.
func poll(timeout time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			if last != nil {
				return fmt.Errorf("not within %s: %w", timeout, last)
			}
			return fmt.Errorf("not within %s", timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// get sends a GET with host to the activator s and returns the status
// and body.
func get(client *http.Client, s *Server, host string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+s.Addr().String()+"/", nil)
	if err != nil {
		return 0, "", err
	}
	req.Host = host
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b)), err
}
