package cluster

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/podgate/podgate/internal/ociimage"
	"github.com/podgate/podgate/kube/controlplane"
	"github.com/podgate/podgate/kube/install"
	"github.com/podgate/podgate/kube/knative"
	"github.com/podgate/podgate/node/images"
	"github.com/podgate/podgate/node/kube"
	"github.com/podgate/podgate/node/netns"
	"github.com/podgate/podgate/node/netns/nodenet"
)

// Child is the cluster process, `podgate cluster child`, started by Up in
// a network namespace of its own: it sets up the network, starts the
// control plane and the node, forwards the host's listener to the API
// server, reports ready on its pipe, and runs until SIGTERM or SIGINT.
// Then it stops the node (its pods terminate gracefully and are deleted;
// a second signal kills them at once), the control plane, and the
// network, in that order. dir must be the one in configJSON (it is on the
// command line to tell clusters apart in `ps`).
func Child(ctx context.Context, dir, configJSON string, stdout, stderr io.Writer) error {
	// First: until then the inherited descriptors would leak into every
	// process started.
	lns, err := netns.InheritedListeners()
	if err != nil {
		return err
	}
	var cc childConfig
	if err := json.Unmarshal([]byte(configJSON), &cc); err != nil || cc.Dir != dir || cc.ReadyFd < 3 {
		return fmt.Errorf("podgate cluster child is started by podgate cluster up only: bad --config (%v)", err)
	}
	syscall.CloseOnExec(cc.ReadyFd)
	ready := os.NewFile(uintptr(cc.ReadyFd), "ready")
	defer ready.Close()
	apiLn, ok := lns["api"]
	if !ok {
		return errors.New("podgate cluster child: no API listener was passed")
	}
	log := logger(stderr)
	// One channel for every stop signal, handed to the node once it runs:
	// a signal caught twice (here and by the node) would count as the
	// second, which kills the pods instead of stopping them.
	sigs := make(chan os.Signal, 3)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)

	network, err := netns.SetupCluster(cc.PodCIDR)
	if err != nil {
		return err
	}
	defer func() {
		if err := network.Close(); err != nil {
			log.Warn("remove the cluster network", "err", err)
		}
	}()
	if cc.ClusterDNS != "" {
		// kube-proxy runs on this cluster (--knative).
		if err := network.RouteServices(controlplane.DefaultServiceCIDR); err != nil {
			return err
		}
	}
	cp, err := startControlPlane(sigs, cc, network.Gateway().String(), log)
	if err != nil {
		return err
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			log.Warn("stop the control plane", "err", err)
		}
	}()
	port := apiPort(cp)
	fwdCtx, stopForward := context.WithCancel(context.Background())
	forwarded := make(chan error, 2)
	go func() { forwarded <- netns.Forward(fwdCtx, apiLn, net.JoinHostPort("127.0.0.1", port)) }()
	forwards := 1
	if doorLn, ok := lns["door"]; ok {
		forwards++
		// The admin's credential: the cluster process holds it anyway.
		go func() { forwarded <- install.ServeFrontDoor(fwdCtx, doorLn, cp.AdminConfig(), log) }()
	}
	if ingressLn, ok := lns["ingress"]; ok {
		forwards++
		go func() { forwarded <- knative.ServeIngress(fwdCtx, ingressLn, cp.AdminConfig(), log) }()
	}
	defer func() {
		stopForward()
		for range forwards {
			<-forwarded
		}
	}()
	return runNode(ctx, sigs, cc, cp, network, port, ready, stdout, log)
}

// startControlPlane starts the control plane with the API server on every
// address of the namespace, advertising the node's: a pod reaches it at
// the node's address, and the `kubernetes` Service's endpoint is a real
// one. A signal during the start ends it; after the start, signals are
// the node's (which stops first) and the control plane is stopped by the
// caller.
func startControlPlane(sigs <-chan os.Signal, cc childConfig, gateway string, log *slog.Logger) (*controlplane.ControlPlane, error) {
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	watched := make(chan bool, 1)
	go func() {
		select {
		case sig := <-sigs:
			log.Info("stopping while the control plane starts", "signal", sig.String())
			cancel()
			watched <- true
		case <-started:
			watched <- false
		}
	}()
	cp, err := controlplane.Start(ctx, controlplane.Options{
		Dir: filepath.Join(cc.Dir, controlPlaneDir), BinDir: cc.BinDir,
		BindAddress: "0.0.0.0", AdvertiseAddress: gateway, Logger: log,
	})
	close(started)
	if aborted := <-watched; aborted || err != nil {
		cancel()
		if err == nil {
			<-cp.Done()
			err = errors.New("stopped while the control plane started")
		}
		return nil, err
	}
	// ctx stays: cp.Stop stops the control plane, and ending ctx would
	// too; it is released with the process.
	return cp, nil
}

func apiPort(cp *controlplane.ControlPlane) string {
	u, _ := url.Parse(cp.URL())
	return u.Port()
}

// runNode runs the node agent until a signal on sigs (or the end of ctx),
// reporting ready once it runs its pods.
func runNode(ctx context.Context, sigs <-chan os.Signal, cc childConfig, cp *controlplane.ControlPlane, network *netns.Cluster, port string, ready *os.File, stdout io.Writer, log *slog.Logger) error {
	gateway := network.Gateway().String()
	kubeconfig, err := cp.NodeKubeconfig(cc.NodeName)
	if err != nil {
		return err
	}
	im, err := images.FromFlags(cc.Images)
	if err != nil {
		return err
	}
	if cc.Install {
		// podgate's image, written there by the host side while the
		// control plane starts; it is read when a pod of it starts.
		im.Store = ociimage.Layout{Dir: filepath.Join(cc.Dir, imageDir), CacheDir: filepath.Join(cc.Dir, imageCacheDir)}
	}
	kubelet, err := kubeletAPI(cp, cc.NodeName, network.Gateway())
	if err != nil {
		return err
	}
	apiServer := net.JoinHostPort(gateway, port)
	msg, _ := json.Marshal(readyMessage{Kubeconfig: cp.AdminKubeconfig(), APIServer: apiServer})
	return kube.Run(ctx, kube.Config{
		Signals:    sigs,
		Kubeconfig: kubeconfig, NodeName: cc.NodeName, NodeIP: gateway, MaxPods: cc.MaxPods,
		Network:          nodenet.New(network),
		KubeletAPI:       kubelet,
		PodsDir:          PodsDir(cc.Dir),
		APIServerForPods: apiServer,
		ClusterDNS:       clusterDNS(cc),
		Images:           im, Version: cc.Version,
		Output: stdout, Logger: log,
		Ready: func() {
			if _, err := ready.Write(append(msg, '\n')); err != nil {
				log.Warn("report ready", "err", err)
			}
		},
	})
}

// kubeletAPI is the node's kubelet API on the node's address, port
// 10250 (the cluster's namespace is its own: the port is free), with a
// serving certificate of the cluster's CA for that address, trusting the
// API server's kubelet client certificate.
func kubeletAPI(cp *controlplane.ControlPlane, nodeName string, nodeIP netip.Addr) (*kube.KubeletAPI, error) {
	kp, ca, err := cp.KubeletServing(nodeName, []net.IP{net.IP(nodeIP.AsSlice())})
	if err != nil {
		return nil, err
	}
	cert, err := kp.TLSCertificate()
	if err != nil {
		return nil, fmt.Errorf("kubelet API certificate: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("kubelet API: the cluster's CA does not parse")
	}
	return &kube.KubeletAPI{Cert: *cert, ClientCAs: pool}, nil
}

// clusterDNS is the node's --cluster-dns: CoreDNS's Service address on a
// cluster with Knative, none otherwise (pods get the node's resolv.conf,
// as a kubelet without --cluster-dns gives them).
func clusterDNS(cc childConfig) []netip.Addr {
	ip, err := netip.ParseAddr(cc.ClusterDNS)
	if err != nil {
		return nil
	}
	return []netip.Addr{ip}
}
