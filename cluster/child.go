package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/podgate/podgate/controlplane"
	"github.com/podgate/podgate/kubenode"
	"github.com/podgate/podgate/podnet"
	"github.com/podgate/podgate/runtime"
	"github.com/podgate/podgate/runtime/images"
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
	lns, err := podnet.InheritedListeners()
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
	sigCtx, stopSignals := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stopSignals()

	network, err := podnet.SetupCluster(cc.PodCIDR)
	if err != nil {
		return err
	}
	defer func() {
		if err := network.Close(); err != nil {
			log.Warn("remove the cluster network", "err", err)
		}
	}()
	cp, err := startControlPlane(sigCtx, cc, network.Gateway().String(), log)
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
	forwarded := make(chan error, 1)
	go func() { forwarded <- podnet.Forward(fwdCtx, apiLn, net.JoinHostPort("127.0.0.1", port)) }()
	defer func() { stopForward(); <-forwarded }()
	return runNode(sigCtx, cc, cp, network.Gateway().String(), port, ready, stdout, log)
}

// startControlPlane starts the control plane with the API server on every
// address of the namespace, advertising the node's: a pod reaches it at
// the node's address, and the `kubernetes` Service's endpoint is a real
// one. A signal during the start ends it.
func startControlPlane(sigCtx context.Context, cc childConfig, gateway string, log *slog.Logger) (*controlplane.ControlPlane, error) {
	// Not sigCtx itself: a signal after the start must stop the node
	// first, the control plane after it.
	cpCtx, cancel := context.WithCancel(context.Background())
	abort := context.AfterFunc(sigCtx, cancel)
	defer abort()
	cp, err := controlplane.Start(cpCtx, controlplane.Options{
		Dir: filepath.Join(cc.Dir, controlPlaneDir), BinDir: cc.BinDir,
		BindAddress: "0.0.0.0", AdvertiseAddress: gateway, Logger: log,
	})
	if err != nil {
		cancel()
		return nil, err
	}
	if sigCtx.Err() != nil {
		cancel()
		<-cp.Done()
		return nil, errors.New("stopped while the control plane started")
	}
	return cp, nil
}

func apiPort(cp *controlplane.ControlPlane) string {
	u, _ := url.Parse(cp.URL())
	return u.Port()
}

// runNode runs the node agent until sigCtx ends, reporting ready once it
// runs its pods.
func runNode(sigCtx context.Context, cc childConfig, cp *controlplane.ControlPlane, gateway, port string, ready *os.File, stdout io.Writer, log *slog.Logger) error {
	kubeconfig, err := cp.NodeKubeconfig(cc.NodeName)
	if err != nil {
		return err
	}
	im, err := images.FromFlags(cc.Images)
	if err != nil {
		return err
	}
	apiServer := net.JoinHostPort(gateway, port)
	msg, _ := json.Marshal(readyMessage{Kubeconfig: cp.AdminKubeconfig(), APIServer: apiServer})
	return kubenode.Run(sigCtx, kubenode.Config{
		Kubeconfig: kubeconfig, NodeName: cc.NodeName, NodeIP: gateway,
		// Pods still take loopback addresses of the cluster namespace
		// until the node agent puts them in namespaces of their own.
		PodCIDR:          runtime.DefaultPodCIDR,
		PodsDir:          filepath.Join(cc.Dir, podsDir),
		APIServerForPods: apiServer,
		Images:           im, Version: cc.Version,
		Output: stdout, Logger: log,
		Ready: func() {
			if _, err := ready.Write(append(msg, '\n')); err != nil {
				log.Warn("report ready", "err", err)
			}
		},
	})
}
