// Package webhook is podgate's admission webhook on Kubernetes (`podgate
// webhook`): a mutating webhook that injects the gate into the pods that
// opted in, with the same injection as `podgate inject`, and validating
// webhooks that refuse Pods, Deployments and Knative Services with the
// same messages as `podgate validate`.
//
// It manages its own certificates: a CA and a serving certificate kept in
// one Secret of its namespace (so replicas and restarts agree), the CA
// bundle patched into its own two webhook configurations, the serving
// certificate replaced at 2/3 of its lifetime and picked up by the next
// TLS handshake. docs/kubernetes.md ("The admission webhook") describes
// the configurations it expects and why.
package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/discovery"
	admissionclient "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
	coreclient "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/podgate/podgate/admission/inject"
	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/gate/contract"
)

// The paths the webhooks are served at; the webhook configurations in
// kube/deploy/base/webhook name them.
const (
	PathInjectPods              = "/inject/pods"
	PathValidatePods            = "/validate/pods"
	PathValidateDeployments     = "/validate/deployments"
	PathValidateKnativeServices = "/validate/knative-services"
	PathHealthz                 = "/healthz"
	PathReadyz                  = "/readyz"
	PathMetrics                 = "/metrics"
)

// Defaults of Config.
const (
	DefaultListen        = ":9443"
	DefaultNamespace     = "podgate-system"
	DefaultService       = "podgate-webhook"
	DefaultSecret        = "podgate-webhook-certs"
	DefaultConfiguration = "podgate-webhook"
	DefaultCALifetime    = 10 * 365 * 24 * time.Hour
	DefaultCertLifetime  = 365 * 24 * time.Hour
	DefaultSyncPeriod    = time.Minute
	// DefaultKnativeHandoffURL is Knative's activator as Knative Serving
	// installs it: the Service activator-service in knative-serving, whose
	// port 80 takes requests for any revision named by the
	// Knative-Serving-Namespace and Knative-Serving-Revision headers.
	DefaultKnativeHandoffURL = "http://activator-service.knative-serving.svc.cluster.local:80"
)

// retryPeriod is how soon a failed sync, or a webhook configuration not
// there yet, is tried again: the API server calls podgate with an empty
// caBundle until the bundle is in, and fails.
const retryPeriod = 5 * time.Second

// Config configures the webhook. Only Rest is required.
type Config struct {
	// Rest reaches the API server (see internal/kubeconfig).
	Rest *rest.Config
	// Listen is the HTTPS address (default DefaultListen); port 0 takes
	// a free one (Server.Addr says which).
	Listen string
	// Namespace is podgate's own: the Secret lives there, and no pod in
	// it is ever injected (default DefaultNamespace).
	Namespace string
	// Service is the Service in front of the webhook; the serving
	// certificate names SERVICE.NAMESPACE.svc (default DefaultService).
	Service string
	// CertHosts are more DNS names or IP addresses for the serving
	// certificate, for a webhook reached by URL.
	CertHosts []string
	// Secret holds the CA and the serving certificate (default
	// DefaultSecret).
	Secret string
	// MutatingConfiguration and ValidatingConfiguration name podgate's
	// webhook configurations, whose caBundle it keeps (default
	// DefaultConfiguration each).
	MutatingConfiguration, ValidatingConfiguration string
	// GateImage and GateAsContainer shape the injection as for `podgate
	// inject` (default image contract.DefaultImage).
	GateImage       string
	GateAsContainer bool
	// OnlyRouter, when contract.OnlyRouterActivator, tells every injected
	// gate that podgate's activator is its pod's only router
	// (PODGATE_ONLY_ROUTER): its drain then ends on the activator's
	// confirmation instead of the quiet period. Only for a cluster where
	// that holds — one activator, started with --only-router, and nothing
	// else routing to the pods (no kube-proxy, no ingress): `podgate
	// cluster up` without --knative. "" (the default): the quiet period.
	OnlyRouter string
	// KnativeHandoffURL is where an adopted Knative queue container hands
	// the requests it holds while its pod is not ready (default
	// DefaultKnativeHandoffURL, Knative's activator; "-" hands off
	// nothing).
	KnativeHandoffURL string
	// CALifetime and CertLifetime are the certificates' lifetimes
	// (default DefaultCALifetime, DefaultCertLifetime); each is replaced
	// at 2/3 of it.
	CALifetime, CertLifetime time.Duration
	// SyncPeriod is how often the Secret and the caBundles are checked
	// for changes by another replica or by hand (default
	// DefaultSyncPeriod).
	SyncPeriod time.Duration
	// Logger reports certificate changes and problems; nil discards.
	Logger *slog.Logger
}

// knativeHandoff is the hand-off address adopted queue containers get: ""
// for "-" (none).
func (c *Config) knativeHandoff() string {
	if c.KnativeHandoffURL == "-" {
		return ""
	}
	return c.KnativeHandoffURL
}

func (c *Config) setDefaults() {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&c.Listen, DefaultListen)
	def(&c.Namespace, DefaultNamespace)
	def(&c.Service, DefaultService)
	def(&c.Secret, DefaultSecret)
	def(&c.MutatingConfiguration, DefaultConfiguration)
	def(&c.ValidatingConfiguration, DefaultConfiguration)
	def(&c.GateImage, contract.DefaultImage)
	def(&c.KnativeHandoffURL, DefaultKnativeHandoffURL)
	if c.CALifetime == 0 {
		c.CALifetime = DefaultCALifetime
	}
	if c.CertLifetime == 0 {
		c.CertLifetime = DefaultCertLifetime
	}
	if c.SyncPeriod == 0 {
		c.SyncPeriod = DefaultSyncPeriod
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Check reports the values that are wrong as written, whatever the
// cluster holds: names that Kubernetes would refuse, an address without
// a numeric port, a certificate host that is neither an IP address nor a
// DNS name, lifetimes that are not positive or a certificate that would
// outlive its CA. Zero values stand for the defaults. Start checks too;
// `podgate webhook` checks first, to tell a usage error from a cluster
// that refuses.
func (c Config) Check() error {
	c.setDefaults()
	var errs []error
	for _, n := range []struct{ flag, value string }{{"namespace", c.Namespace}, {"service", c.Service}} {
		if msgs := validation.IsDNS1123Label(n.value); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--%s %q: %s", n.flag, n.value, msgs[0]))
		}
	}
	for _, n := range []struct{ flag, value string }{
		{"secret", c.Secret}, {"mutating-configuration", c.MutatingConfiguration}, {"validating-configuration", c.ValidatingConfiguration},
	} {
		if msgs := validation.IsDNS1123Subdomain(n.value); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--%s %q: %s", n.flag, n.value, msgs[0]))
		}
	}
	if _, port, err := net.SplitHostPort(c.Listen); err != nil {
		errs = append(errs, fmt.Errorf("--listen %q: want HOST:PORT", c.Listen))
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		errs = append(errs, fmt.Errorf("--listen %q: port %q must be a number from 0 to 65535", c.Listen, port))
	}
	for _, h := range c.CertHosts {
		if net.ParseIP(h) == nil && len(validation.IsDNS1123Subdomain(h)) > 0 {
			errs = append(errs, fmt.Errorf("--cert-host %q: neither an IP address nor a DNS name", h))
		}
	}
	if c.OnlyRouter != "" && c.OnlyRouter != contract.OnlyRouterActivator {
		errs = append(errs, fmt.Errorf("--only-router %q: the one router podgate knows is %q", c.OnlyRouter, contract.OnlyRouterActivator))
	}
	if h := c.knativeHandoff(); h != "" {
		if u, err := url.Parse(h); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("--knative-handoff-url %q: want an http:// or https:// URL, or - for none", h))
		}
	}
	switch {
	case c.CALifetime < 0 || c.CertLifetime < 0 || c.SyncPeriod < 0:
		errs = append(errs, errors.New("--ca-lifetime, --cert-lifetime and --sync-period must be positive"))
	case c.CertLifetime > c.CALifetime:
		errs = append(errs, fmt.Errorf("--cert-lifetime %s is longer than --ca-lifetime %s", c.CertLifetime, c.CALifetime))
	}
	return errors.Join(errs...)
}

// Server is a running webhook. Create it with Start.
type Server struct {
	cfg       Config
	log       *slog.Logger
	ln        net.Listener
	http      *http.Server
	mux       *http.ServeMux
	certs     *certStore
	bundles   *bundlePatcher
	discovery discovery.DiscoveryInterface
	optIn     optIn

	ready     atomic.Bool
	knative   atomic.Bool
	trusted   []*x509.Certificate // the bundle last confirmed in the configurations
	lastIssue string              // the last sync problem logged, to log each once

	done chan struct{}
	mu   sync.Mutex
	err  error
}

// Run starts the webhook and serves until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	s, err := Start(ctx, cfg)
	if err != nil {
		return err
	}
	<-s.Done()
	return s.Err()
}

// Start loads (or makes) the certificates, patches the caBundles,
// registers the webhooks and serves. It returns once the webhook serves;
// it stops when ctx ends.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Rest == nil {
		return nil, errors.New("webhook: Config.Rest is required")
	}
	if err := cfg.Check(); err != nil {
		return nil, fmt.Errorf("webhook: %w", err)
	}
	cfg.setDefaults()
	core, err := coreclient.NewForConfig(cfg.Rest)
	if err != nil {
		return nil, fmt.Errorf("webhook: %w", err)
	}
	admissionregistration, err := admissionclient.NewForConfig(cfg.Rest)
	if err != nil {
		return nil, fmt.Errorf("webhook: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg.Rest)
	if err != nil {
		return nil, fmt.Errorf("webhook: %w", err)
	}
	s := &Server{
		cfg: cfg,
		log: cfg.Logger,
		mux: http.NewServeMux(),
		certs: &certStore{
			secrets: core.Secrets(cfg.Namespace),
			name:    cfg.Secret,
			policy: certPolicy{
				caLifetime: cfg.CALifetime, certLifetime: cfg.CertLifetime,
				hosts: append([]string{cfg.Service + "." + cfg.Namespace + ".svc"}, cfg.CertHosts...),
			},
		},
		bundles: &bundlePatcher{
			mutating: admissionregistration.MutatingWebhookConfigurations(), mutatingName: cfg.MutatingConfiguration,
			validating: admissionregistration.ValidatingWebhookConfigurations(), validatingName: cfg.ValidatingConfiguration,
		},
		discovery: disc,
		optIn:     optIn{ownNamespace: cfg.Namespace},
		done:      make(chan struct{}),
	}
	// The first sync must give a certificate: without one there is
	// nothing to serve.
	wake := s.sync(ctx)
	if s.certs.current() == nil {
		return nil, fmt.Errorf("webhook: no serving certificate: %s", s.lastIssue)
	}
	s.register()
	if err := s.listen(); err != nil {
		return nil, err
	}
	go s.serve(ctx, wake)
	s.log.Info("webhook serving", "addr", s.ln.Addr().String(), "namespace", cfg.Namespace,
		"certificate", s.certs.current().Subject.CommonName, "ready", s.ready.Load())
	return s, nil
}

// serve serves until ctx ends or serving fails, then stops the sync
// loop; Done is closed once both have stopped.
func (s *Server) serve(ctx context.Context, wake time.Time) {
	defer close(s.done)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { s.loop(ctx, wake) })
	defer wg.Wait()
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- s.http.ServeTLS(s.ln, "", "") }()
	select {
	case err := <-served:
		s.setErr(fmt.Errorf("webhook: serve: %w", err))
	case <-ctx.Done():
		// Reviews in flight finish; the API server gives each at most
		// the configurations' timeoutSeconds anyway.
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		if err := s.http.Shutdown(sctx); err != nil {
			s.setErr(fmt.Errorf("webhook: shutdown: %w", err))
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			s.setErr(fmt.Errorf("webhook: serve: %w", err))
		}
	}
}

// register puts the webhooks and the health and metrics endpoints on the
// mux; the Knative Services webhook follows once discovery finds the CRD.
func (s *Server) register() {
	s.handle(PathInjectPods, &injector{optIn: s.optIn,
		opts:    inject.Options{GateImage: s.cfg.GateImage, GateAsContainer: s.cfg.GateAsContainer, OnlyRouter: s.cfg.OnlyRouter},
		knative: inject.KnativeOptions{HandoffURL: s.cfg.knativeHandoff()}})
	s.handle(PathValidatePods, &validator{optIn: s.optIn, kind: workload.KindPod})
	s.handle(PathValidateDeployments, &validator{optIn: s.optIn, group: "apps", kind: workload.KindDeployment})
	s.mux.HandleFunc(PathHealthz, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	s.mux.HandleFunc(PathReadyz, func(w http.ResponseWriter, _ *http.Request) {
		if !s.ready.Load() {
			http.Error(w, "the caBundle is not in the webhook configurations yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	s.mux.Handle(PathMetrics, promhttp.HandlerFor(crmetrics.Registry, promhttp.HandlerOpts{}))
}

// handle serves an admission handler with controller-runtime's webhook
// (AdmissionReview decoding, response completion, panic recovery,
// latency metrics per path).
func (s *Server) handle(path string, h admission.Handler) {
	hook, err := admission.StandaloneWebhook(&admission.Webhook{Handler: h}, admission.StandaloneOptions{
		Logger:      logr.FromSlogHandler(s.log.With("webhook", path).Handler()),
		MetricsPath: path,
	})
	if err != nil {
		// StandaloneWebhook fails for no input podgate gives it.
		panic(fmt.Sprintf("webhook %s: %v", path, err))
	}
	s.mux.Handle(path, hook)
}

// listen opens the HTTPS listener. podgate listens itself, rather than
// letting controller-runtime's webhook.Server do it, so that --listen
// may take a free port (tests need one without racing for it) and the
// address taken is known.
func (s *Server) listen() error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("webhook: listen: %w", err)
	}
	s.ln = ln
	s.http = &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		TLSConfig: &tls.Config{
			MinVersion:     tls.VersionTLS12,
			GetCertificate: s.certs.getCertificate,
		},
	}
	return nil
}

// loop syncs at every change the certificates plan and every SyncPeriod.
func (s *Server) loop(ctx context.Context, wake time.Time) {
	for {
		t := time.NewTimer(max(0, min(time.Until(wake), s.cfg.SyncPeriod)))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wake = s.sync(ctx)
	}
}

// sync brings the Secret, the caBundles, the served certificate and the
// Knative webhook up to date, and says when to sync next.
//
// A new serving certificate is served only once the bundle that trusts
// its CA is in the configurations; until then the old one (still valid:
// it is replaced at 2/3 of its lifetime) stays.
func (s *Server) sync(ctx context.Context) time.Time {
	now := time.Now()
	retry := now.Add(min(retryPeriod, s.cfg.SyncPeriod))
	state, wake, err := s.certs.sync(ctx, now)
	if err != nil {
		// The certificate served stays; ready says whether it still
		// verifies (a passing failure to read the Secret must not take
		// every replica out of the Service at once).
		s.report(err.Error())
		s.ready.Store(s.servedIsTrusted(now))
		return retry
	}
	bundleErr := s.bundles.ensure(ctx, state.bundlePEM())
	bundleOK := bundleErr == nil || onlyMissing(bundleErr)
	if bundleOK {
		s.trusted = state.trusted
	}
	cur := s.certs.current()
	if bundleOK || cur == nil || !now.Before(cur.NotAfter) || trusts(s.trusted, state.ca.Cert) {
		if changed, err := s.certs.serve(state); err != nil {
			s.report(err.Error())
			return retry
		} else if changed && cur != nil {
			s.log.Info("serving a new certificate", "serial", state.serving.Cert.SerialNumber.Text(16),
				"notAfter", state.serving.Cert.NotAfter, "ca", state.ca.Cert.Subject.CommonName)
		}
	}
	s.ready.Store(s.servedIsTrusted(now))
	s.discoverKnative()
	if bundleErr != nil {
		s.report(bundleErr.Error())
		return retry
	}
	s.report("")
	return wake
}

// report logs a sync problem when it differs from the last one, and
// that it went away.
func (s *Server) report(issue string) {
	if issue == s.lastIssue {
		return
	}
	if issue == "" {
		s.log.Info("webhook certificates and caBundles in place")
	} else {
		s.log.Warn("webhook sync", "problem", issue)
	}
	s.lastIssue = issue
}

// discoverKnative registers the Knative Services webhook once the API
// server serves serving.knative.dev/v1 services.
func (s *Server) discoverKnative() {
	if s.knative.Load() {
		return
	}
	list, err := s.discovery.ServerResourcesForGroupVersion(workload.KnativeGroupVersion)
	if err != nil {
		if !apierrors.IsNotFound(err) {
			s.log.Warn("discovery of Knative Serving", "error", err)
		}
		return
	}
	for _, r := range list.APIResources {
		if r.Name == "services" {
			s.handle(PathValidateKnativeServices, &validator{optIn: s.optIn, group: "serving.knative.dev", kind: workload.KindService})
			s.knative.Store(true)
			s.log.Info("Knative Serving found: validating its Services")
			return
		}
	}
}

// servedIsTrusted says whether the certificate being served is valid and
// signed by a CA of the bundle last confirmed in the configurations: what
// the API server verifies, and what /readyz answers.
func (s *Server) servedIsTrusted(now time.Time) bool {
	cur := s.certs.current()
	if cur == nil || now.Before(cur.NotBefore) || !now.Before(cur.NotAfter) {
		return false
	}
	for _, ca := range s.trusted {
		if cur.CheckSignatureFrom(ca) == nil {
			return true
		}
	}
	return false
}

func trusts(bundle []*x509.Certificate, ca *x509.Certificate) bool {
	for _, c := range bundle {
		if c.Equal(ca) {
			return true
		}
	}
	return false
}

// onlyMissing says whether every error in err is a configuration that
// does not exist.
func onlyMissing(err error) bool {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			if !onlyMissing(e) {
				return false
			}
		}
		return true
	}
	return errors.Is(err, errConfigurationMissing)
}

func (s *Server) setErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = errors.Join(s.err, err)
}

// Addr is the address the webhook serves on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Done is closed once the webhook has stopped serving.
func (s *Server) Done() <-chan struct{} { return s.done }

// Err is why the webhook stopped, nil for the end of its context.
func (s *Server) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Ready reports whether the webhook serves a certificate its webhook
// configurations trust, as of the last sync (what /readyz answers).
func (s *Server) Ready() bool { return s.ready.Load() }

// Certificate is the serving certificate being handed out.
func (s *Server) Certificate() *x509.Certificate { return s.certs.current() }

// KnativeServices reports whether the Knative Services webhook is
// registered.
func (s *Server) KnativeServices() bool { return s.knative.Load() }
