package gatemain

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/podgate/podgate/gate"
	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/gate/podapi"
)

// Config is what `podgate gate` is given besides its environment.
type Config struct {
	// LookupEnv reads the environment (os.LookupEnv).
	LookupEnv func(string) (string, bool)
	// Logger gets the gate's logs.
	Logger *slog.Logger
	// RequestLog is the --request-log flag when given; nil leaves it to
	// the environment: OBSERVABILITY_CONFIG's enableRequestLog (Knative
	// 1.19 and later) or $SERVING_ENABLE_REQUEST_LOG (before).
	RequestLog *bool
	// Stdout gets the request log, one JSON line per request.
	Stdout io.Writer
}

// EnvEnableRequestLog is Knative's switch for queue-proxy's request log
// before Knative 1.19, honoured as such.
const EnvEnableRequestLog = contract.EnvEnableRequestLog

// getenv is LookupEnv without the "set" answer.
func (c Config) getenv(k string) string {
	v, _ := c.LookupEnv(k)
	return v
}

// Run runs the gate its environment describes until ctx ends (SIGTERM),
// then drains and returns. Every error is the environment's or the
// machine's (invalid input); it names the variable or the address.
func Run(ctx context.Context, c Config) error {
	cfg, err := contract.DecodeEnv(c.LookupEnv)
	if err != nil {
		return err
	}
	host, err := ListenHost(cfg, c.getenv)
	if err != nil {
		return err
	}
	obs, err := contract.ParseObservability(c.getenv(contract.EnvObservabilityConfig))
	if err != nil {
		return err
	}
	requestLog, err := c.requestLog(obs)
	if err != nil {
		return err
	}
	opts := gate.Options{Config: cfg, Logger: c.Logger, RequestLogTemplate: obs.RequestLogTemplate, LogProbeRequests: obs.EnableProbeRequestLog}
	if requestLog {
		opts.RequestLog = c.Stdout
	}
	warnUnexported(c.Logger, obs)
	switch src := cfg.StatusSource; src {
	case contract.StatusSourceNone:
	case contract.StatusSourceKubernetes:
		s, err := podapi.ForCluster(cfg.Namespace, cfg.Pod)
		if err != nil {
			return fmt.Errorf("%s: %w", contract.EnvStatusSource, err)
		}
		opts.Status = s
		// The same API takes the gate's pod condition.
		if opts.Conditions, err = podapi.ConditionWriterForCluster(cfg.Namespace, cfg.Pod); err != nil {
			return fmt.Errorf("%s: %w", contract.EnvStatusSource, err)
		}
	default:
		s, err := podapi.ForURL(src, cfg.Namespace, cfg.Pod)
		if err != nil {
			return fmt.Errorf("%s: %w", contract.EnvStatusSource, err)
		}
		defer s.Close()
		opts.Status = s
		if opts.Conditions, err = podapi.ConditionWriterForURL(src, cfg.Namespace, cfg.Pod); err != nil {
			return fmt.Errorf("%s: %w", contract.EnvStatusSource, err)
		}
	}
	g, err := gate.New(opts)
	if err != nil {
		return err
	}
	ls, err := gate.Listen(host, cfg)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if obs.Runtime.ProfilingEnabled() {
		stop, err := c.serveProfiles(host)
		if err != nil {
			ls.Close()
			return err
		}
		defer stop()
	}
	return g.Serve(ctx, ls)
}

// requestLog: the flag, else the environment's switches — either turns
// it on.
func (c Config) requestLog(obs contract.Observability) (bool, error) {
	if c.RequestLog != nil {
		return *c.RequestLog, nil
	}
	if obs.EnableRequestLog {
		return true, nil
	}
	v := c.getenv(EnvEnableRequestLog)
	if v == "" {
		return false, nil
	}
	on, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s: %q is not true or false", EnvEnableRequestLog, v)
	}
	return on, nil
}

// ListenHost is the pod IP when it is a loopback address: locally every
// pod has its own (127.0.1.N), and a gate must not take its ports on
// every interface. On Kubernetes the pod IP is the pod's own interface and
// "" (every interface) lets callers inside the pod use 127.0.0.1 too, as
// with queue-proxy. The injector sets SERVING_POD_IP in both modes, so the
// address, not its presence, tells them apart.
func ListenHost(cfg contract.Config, getenv func(string) string) (string, error) {
	ip := cfg.PodIP
	if ip == "" {
		ip = getenv("POD_IP")
		if ip != "" && net.ParseIP(ip) == nil {
			return "", fmt.Errorf("POD_IP: %q is not an IP address", ip)
		}
	}
	if parsed := net.ParseIP(ip); parsed != nil && parsed.IsLoopback() {
		return ip, nil
	}
	return "", nil
}

// waitPoll is how often Wait asks the gate.
const waitPoll = 10 * time.Millisecond

// Wait waits until the gate configured by getenv's environment answers on
// its admin port (/livez), at most timeout, and returns the URL it asked.
// It is the gate's startup probe when the gate runs as a native sidecar:
// an httpGet probe would do, but its first attempt usually comes before
// the gate listens (always with podgate's node agent, which probes right
// at the start) — a "Startup probe failed: connection refused" on every
// pod start, and a whole period before the app may start. Waiting here
// passes on the first attempt, as soon as the gate serves.
func Wait(ctx context.Context, getenv func(string) string, timeout time.Duration) (string, error) {
	cfg, err := contract.Decode(getenv)
	if err != nil {
		return "", err
	}
	host, err := ListenHost(cfg, getenv)
	if err != nil {
		return "", err
	}
	if host == "" {
		host = "127.0.0.1" // the gate listens on every interface
	}
	url := "http://" + net.JoinHostPort(host, strconv.Itoa(cfg.AdminPort)) + contract.LivezPath
	return url, waitServing(ctx, url, timeout)
}

// waitServing polls url until it answers 200 or timeout passes.
func waitServing(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s answered %s", url, resp.Status)
		}
		if ctx.Err() == nil {
			last = err
		}
		t := time.NewTimer(waitPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			if last == nil {
				last = ctx.Err()
			}
			return fmt.Errorf("the gate does not serve after %s: %w", timeout, last)
		case <-t.C:
		}
	}
}
