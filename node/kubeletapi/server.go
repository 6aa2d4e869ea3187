package kubeletapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// DefaultPort is the kubelet's --port.
const DefaultPort = 10250

// Pods is what the server serves from: the node agent. A StatusError
// chooses the answer's status.
type Pods interface {
	// Logs is a container's output (node.Agent.Logs); opts.Container is
	// set.
	Logs(ctx context.Context, namespace, pod string, opts corev1.PodLogOptions) (io.ReadCloser, error)
	// Exec runs cmd in a running container as its own process runs, with
	// streams, until it exits (its exit code) or ctx ends (it is killed).
	Exec(ctx context.Context, namespace, pod, container string, cmd []string, streams ExecIO) (exitCode int, err error)
	// DialPort connects to port on localhost inside the pod's network, as
	// a container runtime's port-forward does.
	DialPort(ctx context.Context, namespace, pod string, port uint16) (net.Conn, error)
}

// ExecIO are an exec session's streams.
type ExecIO struct {
	// Stdin is the command's input; nil: none (the null device).
	Stdin io.Reader
	// Stdout and Stderr receive its output; nil discards. With TTY,
	// Stdout receives the terminal's output and Stderr is unused.
	Stdout, Stderr io.Writer
	// TTY runs the command on a terminal of its own.
	TTY bool
	// Resize carries the terminal's sizes as the client's changes (TTY
	// only); nil: none.
	Resize <-chan TerminalSize
}

// TerminalSize is a terminal's size in characters, as the resize stream
// carries it (JSON {"Width":…,"Height":…}).
type TerminalSize struct {
	Width, Height uint16
}

// Config configures a Server.
type Config struct {
	// NodeName is the Node whose subresources a caller must be allowed.
	NodeName string
	// Cert is the serving certificate (the API server verifies it for the
	// node's InternalIP).
	Cert tls.Certificate
	// ClientCAs verify the callers' client certificates.
	ClientCAs *x509.CertPool
	// Authorizer decides what an authenticated caller may do
	// (SubjectAccessReviews on the API server).
	Authorizer Authorizer
	// Pods serves the requests.
	Pods Pods
	// Logger reports refused callers and failures; nil discards.
	Logger *slog.Logger
}

// Server is a node's kubelet API. Create it with New, run it with Serve.
type Server struct {
	cfg Config
	log *slog.Logger
	mux *http.ServeMux
}

// New checks cfg and makes the server.
func New(cfg Config) (*Server, error) {
	switch {
	case cfg.NodeName == "":
		return nil, errors.New("kubelet API: node name: required")
	case len(cfg.Cert.Certificate) == 0:
		return nil, errors.New("kubelet API: serving certificate: required")
	case cfg.ClientCAs == nil:
		return nil, errors.New("kubelet API: client CA: required (callers are authenticated by client certificate)")
	case cfg.Authorizer == nil || cfg.Pods == nil:
		return nil, errors.New("kubelet API: authorizer and pods: required")
	}
	s := &Server{cfg: cfg, log: cfg.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /containerLogs/{ns}/{pod}/{container}", s.containerLogs)
	// GET and POST, as the kubelet; the pod's UID may come before the
	// container (the API server sends none).
	for _, m := range []string{"GET", "POST"} {
		s.mux.HandleFunc(m+" /exec/{ns}/{pod}/{container}", s.exec)
		s.mux.HandleFunc(m+" /exec/{ns}/{pod}/{uid}/{container}", s.exec)
		s.mux.HandleFunc(m+" /portForward/{ns}/{pod}", s.portForward)
		s.mux.HandleFunc(m+" /portForward/{ns}/{pod}/{uid}", s.portForward)
	}
	return s, nil
}

// Handler is the API behind authentication and authorization, for a
// server of the caller's.
func (s *Server) Handler() http.Handler { return s.authenticate(s.authorize(s.mux)) }

// TLSConfig is the server's TLS: its certificate, and client certificates
// verified against ClientCAs when given (none given: a 401 in Handler).
func (s *Server) TLSConfig() *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{s.cfg.Cert},
		ClientAuth:   tls.VerifyClientCertIfGiven,
		ClientCAs:    s.cfg.ClientCAs,
		MinVersion:   tls.VersionTLS12,
		// No h2: the SPDY upgrade of exec and port-forward needs HTTP/1.1.
		NextProtos: []string{"http/1.1"},
	}
}

// Serve serves on ln (TLS is added here) until ctx ends, then closes the
// connections: follows and exec sessions end with the node.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		_ = srv.Close()
	}()
	err := srv.Serve(tls.NewListener(ln, s.TLSConfig()))
	<-stopped
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("kubelet API: %w", err)
}

// writeError answers err as the kubelet does: its message as plain text,
// the status of a StatusError (which the API server hands on to kubectl),
// else 500.
func (s *Server) writeError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	var st apierrors.APIStatus
	if errors.As(err, &st) && st.Status().Code != 0 {
		code = int(st.Status().Code)
	}
	if code == http.StatusInternalServerError {
		s.log.Warn("kubelet API request failed", "err", err)
	}
	http.Error(w, err.Error(), code)
}
