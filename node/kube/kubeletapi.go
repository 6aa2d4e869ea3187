package kube

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strconv"

	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"

	"github.com/podgate/podgate/node/kubeletapi"
)

// KubeletAPI is the node's kubelet API (package node/kubeletapi): what
// the API server calls for `kubectl logs`, `exec` and `port-forward`.
type KubeletAPI struct {
	// Listen is the address it listens on (default NODE-IP:10250, the
	// kubelet's port); port 0 takes a free one. The Node publishes the
	// port as status.daemonEndpoints.kubeletEndpoint, and the API server
	// dials the Node's InternalIP there.
	Listen string
	// Cert is its serving certificate, valid for the node's InternalIP
	// and signed by the CA the API server's --kubelet-certificate-authority
	// names.
	Cert tls.Certificate
	// ClientCAs verify callers' client certificates (the API server's
	// --kubelet-client-certificate).
	ClientCAs *x509.CertPool
}

// kubeletServer is the kubelet API's listener, open before the Node is
// registered (its port goes into the Node), served once the agent runs.
type kubeletServer struct {
	ln   net.Listener
	port int32
}

// listenKubeletAPI opens the kubelet API's listener; nil without one.
func (cfg Config) listenKubeletAPI() (*kubeletServer, error) {
	k := cfg.KubeletAPI
	if k == nil {
		return nil, nil
	}
	addr := k.Listen
	if addr == "" {
		addr = net.JoinHostPort(cfg.NodeIP, strconv.Itoa(kubeletapi.DefaultPort))
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("kubelet API: listen on %s: %w", addr, err)
	}
	return &kubeletServer{ln: ln, port: int32(ln.Addr().(*net.TCPAddr).Port)}, nil
}

// serve runs the kubelet API for pods until ctx ends; the returned
// function waits for it.
func (ks *kubeletServer) serve(ctx context.Context, cfg Config, rc *rest.Config, pods kubeletapi.Pods) (wait func(), err error) {
	if ks == nil {
		return func() {}, nil
	}
	authz, err := authorizationclient.NewForConfig(rc)
	if err != nil {
		ks.ln.Close()
		return nil, fmt.Errorf("kubelet API: client: %w", err)
	}
	srv, err := kubeletapi.New(kubeletapi.Config{
		NodeName: cfg.NodeName, Cert: cfg.KubeletAPI.Cert, ClientCAs: cfg.KubeletAPI.ClientCAs,
		Authorizer: kubeletapi.SubjectAccessReviews{Client: authz.SubjectAccessReviews()},
		Pods:       pods, Logger: cfg.Logger.With("component", "kubelet-api"),
	})
	if err != nil {
		ks.ln.Close()
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ctx, ks.ln); err != nil && !errors.Is(err, net.ErrClosed) {
			cfg.Logger.Error("kubelet API stopped", "err", err)
		}
	}()
	cfg.Logger.Info("kubelet API listening", "addr", ks.ln.Addr().String())
	return func() { <-done }, nil
}

// close releases a listener never served.
func (ks *kubeletServer) close() {
	if ks != nil {
		ks.ln.Close()
	}
}
