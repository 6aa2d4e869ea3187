package gate

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/gate/servingtls"
)

// System-internal TLS, as queue-proxy serves it: when the serving
// certificate is mounted at the gate's start (both contract.TLSCertFile
// and contract.TLSKeyFile in Config.TLSCertDir), the gate also serves
// QUEUE_SERVING_TLS_PORT, with the same handler as the traffic port
// (health checks included) and the settings of QUEUE_PROXY_TLS_*. A
// certificate mounted later is not looked for, as queue-proxy does not;
// a rotated one is served from the next handshake on (package
// servingtls). Without the files the gate opens nothing: two stat calls
// at start are all TLS costs it.

// listenTLS opens the TLS port into ls.TLS when the certificate is
// mounted.
func listenTLS(host string, cfg contract.Config, ls *Listeners) error {
	cfg = withTLSDefaults(cfg)
	on, err := servingtls.Mounted(cfg.TLSCertDir, contract.TLSCertFile, contract.TLSKeyFile)
	if err != nil {
		return fmt.Errorf("%s: %w", contract.EnvTLSCertDir, err)
	}
	if !on {
		return nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(cfg.TLSPort)))
	if err != nil {
		return fmt.Errorf("%s %d: %w", contract.EnvQueueServingTLSPort, cfg.TLSPort, err)
	}
	ls.TLS = ln
	return nil
}

// withTLSDefaults fills what a Config made by hand rather than decoded
// may lack: the certificate directory and the minimum version.
func withTLSDefaults(cfg contract.Config) contract.Config {
	if cfg.TLSCertDir == "" {
		cfg.TLSCertDir = contract.KnativeCertDir
	}
	if cfg.TLS.MinVersion == 0 {
		cfg.TLS.MinVersion = contract.DefaultTLSSettings().MinVersion
	}
	return cfg
}

// tlsServer is the server of the TLS port, its certificate loaded; nil
// when TLS is off (ln is nil).
func (g *Gate) tlsServer(ln net.Listener) (*server, error) {
	if ln == nil {
		return nil, nil
	}
	certPath := filepath.Join(g.cfg.TLSCertDir, contract.TLSCertFile)
	cert, err := servingtls.Load(certPath, filepath.Join(g.cfg.TLSCertDir, contract.TLSKeyFile), g.log)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", contract.EnvQueueServingTLSPort, ln.Addr(), err)
	}
	tlsCfg := g.cfg.TLS.ServerConfig()
	tlsCfg.GetCertificate = cert.GetCertificate
	// HTTP/2 over TLS is negotiated by ALPN, as on queue-proxy's TLS port.
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetHTTP2(true)
	g.log.Info("serving TLS: the serving certificate is mounted", "addr", ln.Addr().String(), "cert", certPath,
		"subject", cert.Current().Leaf.Subject.String(), "notAfter", cert.Current().Leaf.NotAfter)
	return &server{&http.Server{Handler: g, Protocols: &protos, TLSConfig: tlsCfg, ReadHeaderTimeout: time.Minute,
		ErrorLog: slog.NewLogLogger(g.log.Handler(), slog.LevelWarn)}, ln, true}, nil
}
