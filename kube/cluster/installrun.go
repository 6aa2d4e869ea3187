package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/podgate/podgate/kube/controlplane"
	"github.com/podgate/podgate/kube/install"
	"github.com/podgate/podgate/kube/knative"
)

// imageBuild is install.BuildImage, run while the control plane starts.
type imageBuild struct {
	cancel context.CancelFunc
	done   chan struct{} // closed once img and err are set
	img    install.Image
	err    error
}

func startImageBuild(ctx context.Context, cfg Config) *imageBuild {
	ctx, cancel := context.WithCancel(ctx)
	b := &imageBuild{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(b.done)
		b.img, b.err = install.BuildImage(ctx, filepath.Join(cfg.Dir, imageDir), cfg.Executable)
	}()
	return b
}

// wait ends the build if it still runs and waits for it.
func (b *imageBuild) wait() {
	b.cancel()
	<-b.done
}

// install installs podgate on the cluster whose node is Ready — its
// image, kube/deploy/base, the webhook, the activator and the node status
// service ready — and says
// where the front door is. Meanwhile it watches the cluster process, ctx
// and the signals, as Up does: stopped reports that the cluster was
// stopped (or failed, or the install did), and Up returns err.
func (h *hostSide) install(ctx context.Context, sigs chan os.Signal, info *Info, image *imageBuild, begin time.Time) (stopped bool, err error) {
	cfg := h.cfg
	start := time.Now()
	fmt.Fprintf(cfg.Stderr, "podgate: installing podgate (deploy/base: the webhook, the activator, the node status service) from its image (--no-install: a bare cluster)\n")
	stopped, err = h.during(ctx, sigs, "podgate", func(ictx context.Context) error {
		select {
		case <-image.done:
		case <-ictx.Done():
			return ictx.Err()
		}
		if image.err != nil {
			return image.err
		}
		return install.Apply(ictx, install.Options{Dir: filepath.Join(cfg.Dir, installDir),
			Kubeconfig: info.Kubeconfig, Kubectl: info.Kubectl, Image: image.img.Ref, GateImage: image.img.GateRef,
			Timeout: cfg.InstallTimeout, OnlyRouter: !cfg.Knative})
	})
	if stopped {
		return true, err
	}
	info.FrontDoor, info.Image, info.GateImage = h.rec.FrontDoor, image.img.Ref, image.img.GateRef
	fmt.Fprintf(cfg.Stderr, `podgate: podgate installed in %s: image %s, gate image %s (%s), webhook, activator and node status service ready
podgate: front door on %s (cluster up to front door ready: %s)

Host NAME.NAMESPACE.example.com reaches Service NAME in NAMESPACE through
podgate's activator. Pods opt in to the gate with the label
podgate.dev/inject=enabled, on the pod or its namespace (nothing else:
their gates ask podgate's node status service on their node):

  kubectl label namespace shop podgate.dev/inject=enabled
  curl -H 'Host: web.shop.example.com' %s/
`, time.Since(start).Round(100*time.Millisecond), image.img.Ref, image.img.GateRef, image.img.Built,
		info.FrontDoor, time.Since(begin).Round(100*time.Millisecond), info.FrontDoor)
	return false, nil
}

// during runs install (installing what) while it watches the cluster
// process, ctx and the signals, as Up does: stopped reports that the
// cluster was stopped (or failed, or the install did), and Up returns
// err. install's context ends when the cluster is being stopped.
func (h *hostSide) during(ctx context.Context, sigs chan os.Signal, what string, install func(context.Context) error) (stopped bool, err error) {
	ictx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- install(ictx) }()
	select {
	case err = <-done:
	case <-h.exited:
		cancel()
		<-done
		return true, h.failed("while " + what + " was being installed")
	case sig := <-sigs:
		fmt.Fprintf(h.cfg.Stderr, "podgate: %s: stopping the cluster (again: kill the pods at once)\n", sig)
		cancel()
		<-done
		return true, h.stop(sigs)
	}
	if ctx.Err() != nil {
		return true, h.stop(sigs)
	}
	if err != nil {
		fmt.Fprintf(h.cfg.Stderr, "podgate: installing %s failed; stopping the cluster\n", what)
		return true, errors.Join(fmt.Errorf("install %s: %w", what, err), h.stop(sigs))
	}
	return false, nil
}

// installKnative installs the Knative stack (package kube/knative) on the
// cluster with podgate installed — cluster networking, Knative's CRDs,
// Knative Serving, Traefik — each Step once the one before is ready, and
// says where the ingress is. apiServer is the API server as pods reach it
// (the node's address). Stopped and err as for install.
func (h *hostSide) installKnative(ctx context.Context, sigs chan os.Signal, info *Info, binDir, apiServer string, begin time.Time) (stopped bool, err error) {
	cfg := h.cfg
	start := time.Now()
	queue := knative.QueueGate
	if cfg.QueueProxy == QueueProxyKnative {
		queue = knative.QueueKnative
	}
	fmt.Fprintf(cfg.Stderr, "podgate: installing Knative Serving %s (queue sidecar: %s), kube-proxy, CoreDNS and Traefik as its ingress\n", knative.ServingVersion, cfg.QueueProxy)
	stopped, err = h.during(ctx, sigs, "Knative", func(ictx context.Context) error {
		steps, err := knative.Prepare(ictx, binDir, filepath.Join(cfg.Dir, imageDir), knative.Options{
			Dir: filepath.Join(cfg.Dir, knativeDir), Queue: queue, GateImage: info.GateImage,
			PodCIDR: cfg.PodCIDR, ServiceCIDR: controlplane.DefaultServiceCIDR, APIServer: "https://" + apiServer,
		})
		if err != nil {
			return err
		}
		return knative.Install(ictx, knative.Kubectl{Path: info.Kubectl, Kubeconfig: info.Kubeconfig, Timeout: cfg.InstallTimeout, Progress: cfg.Stderr}, steps)
	})
	if stopped {
		return true, err
	}
	info.Ingress = h.rec.Ingress
	fmt.Fprintf(cfg.Stderr, `podgate: Knative Serving installed in %s (cluster up to Knative ready: %s)
podgate: Knative ingress (Traefik) on %s

A Knative Service NAME in NAMESPACE answers at Host NAME.NAMESPACE.%s:

  kubectl apply -f examples/hello.yaml
  kubectl get ksvc hello
  curl -H 'Host: hello.default.%s' %s/
`, time.Since(start).Round(100*time.Millisecond), time.Since(begin).Round(100*time.Millisecond), info.Ingress,
		knative.DefaultDomain, knative.DefaultDomain, info.Ingress)
	return false, nil
}

// Lookup describes the cluster running in dir, from its pid file and
// kubeconfig: for tools that started `podgate cluster up` as a process.
// It fails with an error wrapping ErrNotRunning when none runs there.
func Lookup(dir string) (Info, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return Info{}, err
	}
	rec, err := readPidFile(dir)
	if errors.Is(err, os.ErrNotExist) {
		return Info{}, fmt.Errorf("%w: %s has no %s", ErrNotRunning, dir, PidFile)
	}
	if err != nil {
		return Info{}, err
	}
	if !isRecorded(rec) {
		return Info{}, fmt.Errorf("%w: the cluster process %d of %s has ended", ErrNotRunning, rec.Pid, dir)
	}
	info := Info{Server: rec.Server, Pid: rec.Pid, FrontDoor: rec.FrontDoor, Ingress: rec.Ingress}
	if p := filepath.Join(dir, KubeconfigFile); fileExists(p) {
		info.Kubeconfig = p
	}
	return info, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
