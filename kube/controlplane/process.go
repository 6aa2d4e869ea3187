package controlplane

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/podgate/podgate/node/proc"
)

// logTailLines is how much of a component's log an error quotes.
const logTailLines = 25

// component is one running server.
type component struct {
	name string
	log  string // its log file
	proc *proc.Process
	out  *os.File
}

// launch starts a component with its log in DIR/NAME.log.
func (c *ControlPlane) launch(name string) error {
	args, err := c.args(name)
	if err != nil {
		return err
	}
	args = append(args, c.opts.ExtraArgs[name]...)
	logPath := c.LogFile(name)
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("controlplane: %s log: %w", name, err)
	}
	bin := filepath.Join(c.bins, name)
	fmt.Fprintf(out, "# %s %s\n", bin, strings.Join(args, " "))
	p, err := c.sup.Start(proc.Spec{
		Path:   bin,
		Args:   append([]string{bin}, args...),
		Env:    componentEnv(),
		Dir:    c.opts.Dir,
		Stdout: out,
		Stderr: out,
	})
	if err != nil {
		out.Close()
		return fmt.Errorf("controlplane: start %s: %w", name, err)
	}
	c.mu.Lock()
	c.comps = append(c.comps, &component{name: name, log: logPath, proc: p, out: out})
	c.mu.Unlock()
	c.log.Debug("started", "component", name, "pid", p.Pid)
	return nil
}

// componentEnv is what the servers get of podgate's environment: enough
// to run, and no proxy settings, which would send the API server's calls
// to webhooks and aggregated APIs somewhere else.
func componentEnv() []string {
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	for _, k := range []string{"HOME", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// stop ends the component gracefully, killing it after timeout.
func (comp *component) stop(timeout time.Duration) error {
	defer comp.out.Close()
	select {
	case <-comp.proc.Done():
		return nil // already gone (it exited: the start reported it)
	default:
	}
	_ = comp.proc.Signal(syscall.SIGTERM)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-comp.proc.Done():
		return nil
	case <-t.C:
		comp.proc.Kill()
		<-comp.proc.Done()
		return fmt.Errorf("controlplane: %s did not stop within %s of SIGTERM; killed", comp.name, timeout)
	}
}

// exited is the error for a component that ended while it should run.
func (comp *component) exited() error {
	ex := comp.proc.Exit()
	how := "exit status " + strconv.Itoa(ex.Code)
	if ex.Signal != 0 {
		how = "signal " + ex.Signal.String()
	}
	return fmt.Errorf("controlplane: %s exited (%s); the end of %s:\n%s", comp.name, how, comp.log, logTail(comp.log, logTailLines))
}

// logTail returns the last n lines of the file at path.
func logTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	defer f.Close()
	const maxRead = 64 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > maxRead {
		_, _ = f.Seek(fi.Size()-maxRead, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// args is each component's command line.
func (c *ControlPlane) args(name string) ([]string, error) {
	switch name {
	case Etcd:
		return c.etcdArgs(), nil
	case KubeAPIServer:
		return c.apiServerArgs(), nil
	case KubeControllerManager:
		return c.controllerManagerArgs(), nil
	case KubeScheduler:
		return c.schedulerArgs(), nil
	}
	return nil, fmt.Errorf("controlplane: unknown component %q", name)
}

func (c *ControlPlane) etcdArgs() []string {
	client := "http://127.0.0.1:" + strconv.Itoa(c.ports.etcdClient)
	peer := "http://127.0.0.1:" + strconv.Itoa(c.ports.etcdPeer)
	args := []string{
		"--name=default",
		"--data-dir=" + filepath.Join(c.opts.Dir, "etcd"),
		"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=default=" + peer,
		"--log-level=warn",
	}
	if !c.opts.Fsync {
		args = append(args, "--unsafe-no-fsync")
	}
	return args
}

func (c *ControlPlane) apiServerArgs() []string {
	f := c.files
	args := []string{
		"--etcd-servers=http://127.0.0.1:" + strconv.Itoa(c.ports.etcdClient),
		"--bind-address=" + c.opts.BindAddress,
		"--secure-port=" + strconv.Itoa(c.ports.apiServer),
		"--advertise-address=" + c.opts.AdvertiseAddress,
		"--tls-cert-file=" + f.apiServerCert, "--tls-private-key-file=" + f.apiServerKey,
		"--client-ca-file=" + f.caCert,
		"--service-account-issuer=" + serviceAccountIssuer,
		"--service-account-key-file=" + f.saPub,
		"--service-account-signing-key-file=" + f.saKey,
		"--service-cluster-ip-range=" + c.opts.ServiceCIDR,
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--allow-privileged=true",
		// Webhooks and aggregated APIs are called at their Service's
		// endpoints: no kube-proxy needed.
		"--enable-aggregator-routing=true",
		"--requestheader-client-ca-file=" + f.frontProxyCA,
		"--requestheader-allowed-names=" + frontProxyUser,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + f.frontProxyCert, "--proxy-client-key-file=" + f.frontProxyKey,
		// logs, exec and port-forward go to the node's kubelet API at its
		// InternalIP (the node's name resolves nowhere), on a certificate
		// of the cluster's CA, with the API server's own client
		// certificate.
		"--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
		"--kubelet-client-certificate=" + f.kubeletClientCert, "--kubelet-client-key=" + f.kubeletClientKey,
		"--kubelet-certificate-authority=" + f.caCert,
		"--profiling=false",
	}
	if netipAddr(c.opts.AdvertiseAddress).IsLoopback() {
		// The API server refuses to publish a loopback address as the
		// `kubernetes` Service's endpoint; envtest turns the reconciler
		// off the same way.
		args = append(args, "--endpoint-reconciler-type=none")
	}
	return args
}

func (c *ControlPlane) controllerManagerArgs() []string {
	f := c.files
	return append(c.componentArgs(f.kcmKubeconfig, c.ports.controllerManager, f.kcmCert, f.kcmKey),
		"--root-ca-file="+f.caCert,
		"--service-account-private-key-file="+f.saKey,
		"--use-service-account-credentials=true",
		"--cluster-signing-cert-file="+f.caCert, "--cluster-signing-key-file="+f.caKey,
		"--service-cluster-ip-range="+c.opts.ServiceCIDR,
		"--cluster-name=podgate",
	)
}

func (c *ControlPlane) schedulerArgs() []string {
	f := c.files
	return c.componentArgs(f.schedulerKubeconfig, c.ports.scheduler, f.schedulerCert, f.schedulerKey)
}

// componentArgs are what kube-controller-manager and kube-scheduler are
// both given: one kubeconfig for the API and for checking its callers,
// their secure port on loopback with a certificate of their own and the
// cluster CA for client certificates, no leader election (they run
// alone) and no profiling endpoints.
func (c *ControlPlane) componentArgs(kubeconfig string, port int, cert, key string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + cert, "--tls-private-key-file=" + key,
		"--client-ca-file=" + c.files.caCert,
		"--leader-elect=false",
		"--profiling=false",
	}
}
