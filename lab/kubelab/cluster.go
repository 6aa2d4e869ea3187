// Package kubelab is the lab's world on a Kubernetes cluster: `podgate
// cluster up` run as the real process (Cluster), with podgate installed
// and its front door on host loopback, and a namespace of it per
// scenario (Namespace, a lab.World), where the scenario's manifests go
// through `kubectl apply`, opted in to the gate. The pods are reached
// from inside the cluster's network namespace, which the cluster made
// (its pod CIDR only); load goes through the front door on loopback.
// With Config.Knative the cluster runs real Knative Serving too, and
// KnativeNamespace is the world where a scenario's Knative Services stay
// Knative Services, load going through Knative's ingress.
//
// A program that uses it (its tests) must lock its main goroutine to the
// main thread in an init function, as package podnet asks.
package kubelab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podgate/podgate/internal/k8sbin"
	"github.com/podgate/podgate/kube/cluster"
	"github.com/podgate/podgate/lab"
	"github.com/podgate/podgate/node/netns"
)

// Config says how to start `podgate cluster up`.
type Config struct {
	// Binary is the podgate executable; built with CGO_ENABLED=0, it is
	// its own image (else cluster up builds one from the source tree).
	Binary string
	// Dir is the cluster's directory.
	Dir string
	// PodCIDR is the pods' range, one of its own per cluster running at
	// the same time (outside 127.0.0.0/8 and the Service range).
	PodCIDR string
	// Args are further `cluster up` flags.
	Args []string
	// Knative, when set, is the queue sidecar of `cluster up --knative
	// --queue-proxy KNATIVE` ("gate" or "knative"): Start then waits for
	// the Knative ingress too (IngressURL).
	Knative string
	// StartTimeout bounds the wait for the front door (default 5
	// minutes, 10 with Knative: the control plane, the install; a cold
	// build of the Kubernetes binaries takes longer, build them first).
	StartTimeout time.Duration
}

// doorLine is cluster up's line once podgate is installed.
var doorLine = regexp.MustCompile(`podgate: front door on http://(127(?:\.\d+){3}:\d+)`)

// ingressLine is cluster up --knative's line once Knative is installed.
var ingressLine = regexp.MustCompile(`podgate: Knative ingress \(Traefik\) on http://(127(?:\.\d+){3}:\d+)`)

// Cluster is a running `podgate cluster up`.
type Cluster struct {
	cmd    *exec.Cmd
	stdout *lab.PodOutput
	stderr *lab.Output
	done   chan struct{} // closed once the process was reaped
	err    error         // Wait's error, valid after done

	dir, door string
	// knative is Config.Knative; ingress the Knative ingress's address.
	knative, ingress string
	rest             *rest.Config
	cs               kubernetes.Interface
	dyn              dynamic.Interface
	kubectl          string
	netns            *netns.Netns
	http             *lab.PodHTTP
	stopOnce         sync.Once
}

// Start runs `podgate cluster up --dir DIR --pod-cidr CIDR --listen
// 127.0.0.1:0 --front-door 127.0.0.1:0 ARGS…` and waits until it printed
// its front door (podgate installed, the webhook and the activator
// ready). On error nothing of it is left.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if cfg.Binary == "" || cfg.Dir == "" || cfg.PodCIDR == "" {
		return nil, errors.New("kubelab: Config.Binary, Dir and PodCIDR are required")
	}
	cidr, err := netip.ParsePrefix(cfg.PodCIDR)
	if err != nil {
		return nil, fmt.Errorf("kubelab: Config.PodCIDR: %w", err)
	}
	timeout := cfg.StartTimeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
		if cfg.Knative != "" {
			timeout = 10 * time.Minute
		}
	}
	args := []string{"cluster", "up", "--dir", cfg.Dir, "--pod-cidr", cfg.PodCIDR,
		"--listen", "127.0.0.1:0", "--front-door", "127.0.0.1:0"}
	switch cfg.Knative {
	case "":
	case "gate", "knative":
		args = append(args, "--knative", "--queue-proxy", cfg.Knative, "--ingress", "127.0.0.1:0")
	default:
		return nil, fmt.Errorf("kubelab: Config.Knative %q: want gate or knative", cfg.Knative)
	}
	args = append(args, cfg.Args...)
	c := &Cluster{stdout: lab.NewPodOutput(), stderr: lab.NewOutput(), done: make(chan struct{}), dir: cfg.Dir, knative: cfg.Knative}
	c.cmd = exec.Command(cfg.Binary, args...)
	c.cmd.Stdout, c.cmd.Stderr = c.stdout, c.stderr
	c.cmd.WaitDelay = 10 * time.Second
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("kubelab: start %s: %w", cfg.Binary, err)
	}
	go func() {
		c.err = c.cmd.Wait()
		close(c.done)
	}()
	startCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := c.connect(startCtx, cidr); err != nil {
		_, _ = c.Stop(2 * time.Minute)
		return nil, fmt.Errorf("kubelab: podgate %s: %w\nstderr:\n%s", strings.Join(args, " "), err, c.stderr.String())
	}
	return c, nil
}

// connect waits for the front door line and opens what the lab reaches
// the cluster with: the API server, kubectl, the network namespace.
func (c *Cluster) connect(ctx context.Context, cidr netip.Prefix) error {
	for {
		text, changed := c.stderr.Snapshot()
		if m := doorLine.FindStringSubmatch(text); m != nil && c.door == "" {
			c.door = m[1]
		}
		if m := ingressLine.FindStringSubmatch(text); m != nil {
			c.ingress = m[1]
		}
		if c.door != "" && (c.knative == "" || c.ingress != "") {
			break
		}
		select {
		case <-changed:
		case <-c.done:
			return fmt.Errorf("exited before its front door (and Knative's ingress) was ready (%v)", c.err)
		case <-ctx.Done():
			return fmt.Errorf("no front door (or Knative ingress) line on stderr: %w", ctx.Err())
		}
	}
	info, err := cluster.Lookup(c.dir)
	if err != nil {
		return err
	}
	if c.rest, err = clientcmd.BuildConfigFromFlags("", info.Kubeconfig); err != nil {
		return err
	}
	c.rest.QPS, c.rest.Burst = 50, 100
	if c.cs, err = kubernetes.NewForConfig(c.rest); err != nil {
		return err
	}
	if c.dyn, err = dynamic.NewForConfig(c.rest); err != nil {
		return err
	}
	if c.kubectl, err = k8sbin.Path(k8sbin.Kubectl); err != nil {
		return err
	}
	if c.netns, err = netns.NetnsOf(info.Pid); err != nil {
		return err
	}
	c.http = lab.NewPodHTTP(c.dialInside, func(ip net.IP) error {
		if a, ok := netip.AddrFromSlice(ip); !ok || !cidr.Contains(a.Unmap()) {
			return fmt.Errorf("pod IP %s is not in the cluster's pod CIDR %s", ip, cidr)
		}
		return nil
	})
	return nil
}

// dialInside connects from the cluster's network namespace.
func (c *Cluster) dialInside(ctx context.Context, network, addr string) (net.Conn, error) {
	var conn net.Conn
	err := c.netns.Do(func() error {
		var err error
		conn, err = (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
		return err
	})
	return conn, err
}

// FrontDoorURL is the front door's base URL, http://127.0.0.1:PORT/.
func (c *Cluster) FrontDoorURL() string { return "http://" + c.door + "/" }

// IngressURL is the Knative ingress's base URL, http://127.0.0.1:PORT/
// ("" without Config.Knative).
func (c *Cluster) IngressURL() string {
	if c.ingress == "" {
		return ""
	}
	return "http://" + c.ingress + "/"
}

// QueueSidecar is Config.Knative: the revisions' queue sidecar.
func (c *Cluster) QueueSidecar() string { return c.knative }

// Dir is the cluster's directory (its kubeconfig is cluster.KubeconfigFile there).
func (c *Cluster) Dir() string { return c.dir }

// Client is an admin client of the cluster's API server.
func (c *Cluster) Client() kubernetes.Interface { return c.cs }

// PodHTTP reaches the cluster's pods at their addresses.
func (c *Cluster) PodHTTP() *lab.PodHTTP { return c.http }

// Stdout is the containers' output so far, lines prefixed
// "POD/CONTAINER | "; Stderr cluster up's own log.
func (c *Cluster) Stdout() string { return c.stdout.String() }
func (c *Cluster) Stderr() string { return c.stderr.String() }

// Kubectl runs the cluster's kubectl as its admin, stdin on its input.
func (c *Cluster) Kubectl(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, c.kubectl, append([]string{"--kubeconfig", c.dir + "/" + cluster.KubeconfigFile}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// Stop sends SIGINT (cluster up's Ctrl-C: the pods stop gracefully, then
// the control plane) and waits up to grace for the exit; then SIGKILL,
// and `podgate cluster down` for what is left. It returns the exit code
// and an error when the stop was not clean. It may be called more than
// once.
func (c *Cluster) Stop(grace time.Duration) (int, error) {
	var killed error
	c.stopOnce.Do(func() {
		if c.netns != nil {
			_ = c.netns.Close()
		}
		_ = c.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-c.done:
		case <-time.After(grace):
			_ = c.cmd.Process.Kill()
			<-c.done
			killed = fmt.Errorf("kubelab: cluster up did not stop within %s of SIGINT: killed", grace)
			if err := cluster.Down(context.Background(), c.dir, time.Second, nil); err != nil && !errors.Is(err, cluster.ErrNotRunning) {
				killed = errors.Join(killed, err)
			}
		}
	})
	<-c.done
	return c.cmd.ProcessState.ExitCode(), killed
}
