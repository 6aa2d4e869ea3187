package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/podgate/podgate/internal/k8sbin"
	"github.com/podgate/podgate/internal/knativebin"
	"github.com/podgate/podgate/kube/controlplane"
	"github.com/podgate/podgate/kube/knative"
	"github.com/podgate/podgate/node/netns"
)

// leftoverWait bounds the wait for the cluster's last processes once the
// cluster process is gone: its components and pods die with it
// (parent-death signal, process guardian), within moments.
const leftoverWait = 10 * time.Second

// Up runs a cluster until ctx ends or SIGINT/SIGTERM: the host side (see
// the package documentation). A second signal makes the node kill its
// pods at once instead of waiting for their grace periods; a third kills
// every process of the cluster. It returns once nothing of the cluster
// runs, with the pid file and the kubeconfig removed.
func Up(ctx context.Context, cfg Config) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return fmt.Errorf("cluster directory: %w", err)
	}
	if rec, err := readPidFile(cfg.Dir); err == nil && (isRecorded(rec) || len(SessionMembers(rec.Pid)) > 0) {
		// Processes left of a cluster whose own process is gone count too:
		// a new cluster would clean the directory under them.
		return fmt.Errorf("a cluster already runs in %s (process %d); stop it first: podgate cluster down --dir %s", cfg.Dir, rec.Pid, cfg.Dir)
	}
	// Before the binaries, whose first build takes minutes.
	if err := netns.Preflight(); err != nil {
		return fmt.Errorf("cluster up: %w", err)
	}
	bins, knBins, err := allBinaries(cfg)
	if err != nil {
		return err
	}
	if err := cleanState(cfg.Dir); err != nil {
		return err
	}
	sigs := make(chan os.Signal, 3)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)

	begin := time.Now()
	var image *imageBuild
	if !cfg.NoInstall {
		// While the control plane starts, which takes seconds.
		image = startImageBuild(ctx, cfg)
		defer image.wait()
	}
	h, err := startChild(cfg, bins)
	if err != nil {
		return err
	}
	defer h.cleanup()
	select {
	case msg := <-h.ready:
		info, err := h.announce(cfg, msg, bins, time.Since(begin))
		if err != nil {
			h.stop(sigs)
			return err
		}
		if stopped, err := h.installAll(ctx, sigs, &info, image, knBins, msg.APIServer, begin); stopped {
			return err
		}
		if cfg.Ready != nil {
			cfg.Ready(info)
		}
	case <-h.exited:
		return h.failed("before it was ready")
	case <-ctx.Done():
		return h.stop(sigs)
	case sig := <-sigs:
		fmt.Fprintf(cfg.Stderr, "podgate: %s: stopping the cluster (again: kill the pods at once)\n", sig)
		return h.stop(sigs)
	}
	select {
	case <-h.exited:
		if h.err == nil {
			// It ends with status 0 only when asked to stop: a SIGTERM
			// from elsewhere, `podgate cluster down` most likely.
			h.waitLeftovers()
			fmt.Fprintln(cfg.Stderr, "podgate: the cluster was stopped from outside (SIGTERM to its process: podgate cluster down?)")
			return nil
		}
		return h.failed("while it ran")
	case <-ctx.Done():
	case sig := <-sigs:
		fmt.Fprintf(cfg.Stderr, "podgate: %s: stopping the cluster: pods first, gracefully (again: kill them at once)\n", sig)
	}
	return h.stop(sigs)
}

// allBinaries gets the control plane's binaries and, with --knative, the
// Knative stack's ("" without).
func allBinaries(cfg Config) (bins, knBins string, err error) {
	if bins, err = binaries(cfg.Stderr); err != nil || !cfg.Knative {
		return bins, "", err
	}
	knBins, err = knativeBinaries(cfg.Stderr)
	return bins, knBins, err
}

// installAll installs podgate (unless image is nil: --no-install), then
// the Knative stack (with --knative, from knBins); stopped and err as
// for install.
func (h *hostSide) installAll(ctx context.Context, sigs chan os.Signal, info *Info, image *imageBuild, knBins, apiServer string, begin time.Time) (stopped bool, err error) {
	if image != nil {
		if stopped, err := h.install(ctx, sigs, info, image, begin); stopped {
			return true, err
		}
	}
	if h.cfg.Knative {
		return h.installKnative(ctx, sigs, info, knBins, apiServer, begin)
	}
	return false, nil
}

// k8sBuildHeader is said before the control plane's build steps.
const k8sBuildHeader = "podgate: building the Kubernetes binaries (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl) from source, once; a cold build takes 5 to 15 minutes on 2 cores"

// binaries gets the control plane's binaries, showing the build's steps
// when it is not a cache hit.
func binaries(stderr io.Writer) (string, error) {
	d, err := k8sbin.Ensure(&buildProgress{w: stderr, what: k8sBuildHeader})
	if err != nil {
		return "", fmt.Errorf("the Kubernetes binaries: %w", err)
	}
	return d, nil
}

// knativeBinaries gets the Knative stack's binaries (kube-proxy, CoreDNS,
// Knative Serving's, Traefik), as binaries does the control plane's.
func knativeBinaries(stderr io.Writer) (string, error) {
	// kube-proxy (nftables mode) runs the node's nft, found on the PATH
	// its DaemonSet sets: say so before anything starts.
	if _, err := exec.LookPath("nft"); err != nil {
		if _, err := os.Stat("/usr/sbin/nft"); err != nil {
			return "", errors.New("--knative: kube-proxy needs nft (Debian's package nftables): apt-get install nftables, or run hack/knative-deps.sh")
		}
	}
	d, err := knativebin.Ensure(&buildProgress{w: stderr, what: "podgate: building the Knative stack (kube-proxy, CoreDNS, Knative Serving, Traefik) from source, once; a cold build takes 15 to 40 minutes on 2 cores"})
	if err != nil {
		return "", fmt.Errorf("the Knative stack's binaries: %w", err)
	}
	return d, nil
}

// buildProgress shows the build script's step lines, after a line that
// says what is happening (what); a cache hit shows nothing.
type buildProgress struct {
	w       io.Writer
	what    string
	started bool
	part    []byte
}

func (b *buildProgress) Write(p []byte) (int, error) {
	b.part = append(b.part, p...)
	for {
		i := bytes.IndexByte(b.part, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(b.part[:i])
		b.part = b.part[i+1:]
		if strings.Contains(line, "cache hit") {
			continue
		}
		if !b.started {
			b.started = true
			fmt.Fprintln(b.w, b.what)
		}
		fmt.Fprintln(b.w, line)
	}
}

// cleanState removes what a previous cluster in dir left: a new cluster
// gets a new PKI and an empty etcd.
func cleanState(dir string) error {
	for _, name := range []string{KubeconfigFile, PidFile, controlPlaneDir, podsDir, imageDir, imageCacheDir, installDir, knativeDir} {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("clean the cluster directory: %w", err)
		}
	}
	if err := os.RemoveAll(filepath.Dir(PodsDir(dir))); err != nil {
		return fmt.Errorf("clean the pods' directory: %w", err)
	}
	return nil
}

// hostSide is the running cluster process, seen from the host.
type hostSide struct {
	cfg    Config
	cmd    *exec.Cmd
	rec    pidRecord
	ready  chan readyMessage
	exited chan struct{} // closed once the cluster process is gone
	err    error         // its exit, once exited is closed
}

// startChild starts the cluster process with the API server's listener
// and the ready pipe, and records it in the pid file.
func startChild(cfg Config, bins string) (*hostSide, error) {
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("--listen %s: %w", cfg.Listen, err)
	}
	defer ln.Close()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start the cluster process: %w", err)
	}
	defer readyW.Close()
	cmd := exec.Command(cfg.Executable)
	cmd.Stdout, cmd.Stderr = cfg.Stdout, cfg.Stderr
	// Only a process that escaped the cluster's session could hold the
	// output pipes open after the cluster process ended.
	cmd.WaitDelay = leftoverWait
	lnFile, err := netns.PassListener(cmd, "api", ln)
	if err != nil {
		readyR.Close()
		return nil, err
	}
	defer lnFile.Close()
	door := ""
	if !cfg.NoInstall {
		doorLn, err := net.Listen("tcp", cfg.FrontDoor)
		if err != nil {
			readyR.Close()
			return nil, fmt.Errorf("--front-door %s: %w", cfg.FrontDoor, err)
		}
		defer doorLn.Close()
		doorFile, err := netns.PassListener(cmd, "door", doorLn)
		if err != nil {
			readyR.Close()
			return nil, err
		}
		defer doorFile.Close()
		door = "http://" + doorLn.Addr().String()
	}
	ingress, clusterDNS, closeIngress, err := passIngress(cfg, cmd)
	if err != nil {
		readyR.Close()
		return nil, err
	}
	defer closeIngress()
	cmd.ExtraFiles = append(cmd.ExtraFiles, readyW)
	cc := childConfig{Dir: cfg.Dir, PodCIDR: cfg.PodCIDR, MaxPods: cfg.MaxPods, NodeName: cfg.NodeName, BinDir: bins,
		Images: cfg.Images, Version: cfg.Version, Install: !cfg.NoInstall, ClusterDNS: clusterDNS, ReadyFd: 2 + len(cmd.ExtraFiles)}
	args, err := cc.args()
	if err != nil {
		readyR.Close()
		return nil, err
	}
	cmd.Args = append([]string{cfg.Executable}, args...)
	// A session of its own: a Ctrl-C at the terminal reaches only this
	// process, which stops the cluster in order, and every process of
	// the cluster can be found by its session. If this process dies, the
	// cluster stops gracefully.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGTERM}
	h := &hostSide{cfg: cfg, cmd: cmd, ready: make(chan readyMessage, 1), exited: make(chan struct{})}
	if err := h.start(); err != nil {
		readyR.Close()
		return nil, err
	}
	go h.readReady(readyR)
	if err := h.record(ln.Addr().String(), door, ingress); err != nil {
		h.stop(nil)
		return nil, err
	}
	return h, nil
}

// passIngress opens --ingress and passes it to the cluster process cmd,
// with --knative: its URL, the cluster DNS address the node gives pods,
// and what closes the host's copies once cmd has started. Without
// --knative it does nothing.
func passIngress(cfg Config, cmd *exec.Cmd) (ingress, clusterDNS string, closeFn func(), err error) {
	closeFn = func() {}
	if !cfg.Knative {
		return "", "", closeFn, nil
	}
	dns, err := knative.DNSServiceIP(controlplane.DefaultServiceCIDR)
	if err != nil {
		return "", "", closeFn, err
	}
	ln, err := net.Listen("tcp", cfg.Ingress)
	if err != nil {
		return "", "", closeFn, fmt.Errorf("--ingress %s: %w", cfg.Ingress, err)
	}
	f, err := netns.PassListener(cmd, "ingress", ln)
	if err != nil {
		ln.Close()
		return "", "", closeFn, err
	}
	closeFn = func() { f.Close(); ln.Close() }
	return "http://" + ln.Addr().String(), dns.String(), closeFn, nil
}

// start forks the cluster process from a thread that stays locked until
// the process has exited: the parent-death signal fires when the forking
// thread ends, not the process.
func (h *hostSide) start() error {
	started := make(chan error, 1)
	go func() {
		goruntime.LockOSThread()
		// Never unlocked: the thread ends with this goroutine, after the
		// cluster process.
		if err := netns.StartInNewNetns(h.cmd); err != nil {
			started <- err
			return
		}
		started <- nil
		h.err = h.cmd.Wait()
		close(h.exited)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("start the cluster process: %w", err)
	}
	return nil
}

// record writes the pid file.
func (h *hostSide) record(listen, door, ingress string) error {
	pid := h.cmd.Process.Pid
	st, err := readStat(pid)
	if err != nil {
		return fmt.Errorf("the cluster process: %w", err)
	}
	ns, err := netns.NetnsOf(pid)
	if err != nil {
		return fmt.Errorf("the cluster process: %w", err)
	}
	defer ns.Close()
	h.rec = pidRecord{Pid: pid, StartTime: st.startTime, HostPid: os.Getpid(), Netns: ns.Inode(), Server: "https://" + listen, FrontDoor: door, Ingress: ingress}
	return writePidFile(h.cfg.Dir, h.rec)
}

// readReady takes the child's one line, if it comes.
func (h *hostSide) readReady(r *os.File) {
	defer r.Close()
	line, err := bufio.NewReader(r).ReadBytes('\n')
	if err != nil {
		return // EOF: the child ended first
	}
	var msg readyMessage
	if json.Unmarshal(line, &msg) == nil {
		h.ready <- msg
	}
}

// announce writes the host's kubeconfig and says how to use the cluster.
func (h *hostSide) announce(cfg Config, msg readyMessage, bins string, took time.Duration) (Info, error) {
	kc, err := clientcmd.LoadFromFile(msg.Kubeconfig)
	if err != nil {
		return Info{}, fmt.Errorf("the cluster's admin kubeconfig: %w", err)
	}
	for _, c := range kc.Clusters {
		c.Server = h.rec.Server
	}
	path := filepath.Join(cfg.Dir, KubeconfigFile)
	if err := writeKubeconfig(kc, path); err != nil {
		return Info{}, err
	}
	kubectl := filepath.Join(bins, k8sbin.Kubectl)
	fmt.Fprintf(cfg.Stderr, `podgate: cluster up in %s: node %q Ready, API server %s (inside: %s)

  export KUBECONFIG=%s
  %s get nodes

The cluster runs in its own network namespace (process %d); pods take
addresses from %s. Ctrl-C stops it; after a crash: podgate cluster down --dir %s
`, took.Round(100*time.Millisecond), cfg.NodeName, h.rec.Server, msg.APIServer, path, kubectl, h.rec.Pid, cfg.PodCIDR, cfg.Dir)
	return Info{Kubeconfig: path, Server: h.rec.Server, Pid: h.rec.Pid, Kubectl: kubectl}, nil
}

// writeKubeconfig writes kc to path whole or not at all: whoever waits
// for the file (a script, a test polling for it) must never read it half
// written, which client-go reports as "no configuration has been
// provided". It is written beside path, private, then renamed.
func writeKubeconfig(kc *clientcmdapi.Config, path string) error {
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// failed is the error of a cluster process that ended on its own.
func (h *hostSide) failed(when string) error {
	h.waitLeftovers()
	return fmt.Errorf("%w %s: %v (its messages are above; the control plane's logs are in %s)",
		ErrChildExited, when, h.err, filepath.Join(h.cfg.Dir, controlPlaneDir))
}

// stop ends the cluster: SIGTERM to the cluster process (the node drains,
// then the control plane and the network stop); each further signal on
// sigs is passed on — the second makes the node kill its pods at once —
// and the third kills every process of the cluster.
func (h *hostSide) stop(sigs <-chan os.Signal) error {
	pid := h.cmd.Process.Pid
	_ = syscall.Kill(pid, syscall.SIGTERM)
	for n := 1; ; n++ {
		select {
		case <-h.exited:
			h.waitLeftovers()
			if h.err != nil {
				return fmt.Errorf("the cluster process: %w", h.err)
			}
			return nil
		case sig := <-sigs:
			if n >= 2 {
				fmt.Fprintf(h.cfg.Stderr, "podgate: %s: killing every process of the cluster\n", sig)
				signalAll(SessionMembers(pid), syscall.SIGKILL)
				continue
			}
			fmt.Fprintf(h.cfg.Stderr, "podgate: %s: killing the pods now (again: kill everything)\n", sig)
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
	}
}

// waitLeftovers waits for the processes of the cluster's session to go
// once the cluster process is gone, and kills the ones that linger.
func (h *hostSide) waitLeftovers() {
	sid := h.cmd.Process.Pid
	deadline := time.Now().Add(leftoverWait)
	for {
		left := SessionMembers(sid)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			signalAll(left, syscall.SIGKILL)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cleanup removes the pid file and the kubeconfig of a stopped cluster,
// and its pods' directory (outside the cluster's, see PodsDir).
func (h *hostSide) cleanup() { removeRecord(h.cfg.Dir) }

// ErrChildExited is wrapped by the errors of a cluster process that
// ended on its own.
var ErrChildExited = errors.New("the cluster process exited")
