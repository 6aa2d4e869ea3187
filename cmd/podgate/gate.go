package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/podgate/podgate/gate"
	"github.com/podgate/podgate/gate/podstatus"
	"github.com/podgate/podgate/gateenv"
)

func init() { register(newGateCmd) }

// Knative's switches for queue-proxy's request log, honoured as such.
const envEnableRequestLog = "SERVING_ENABLE_REQUEST_LOG"

func newGateCmd() *cobra.Command {
	var (
		requestLog bool
		logFormat  string
	)
	cmd := &cobra.Command{
		Use:   "gate",
		Short: "Run the gate sidecar (a drop-in for Knative's queue-proxy)",
		Long: `Run the gate: the sidecar that answers for the readiness of every container
of its pod, proxies traffic to the serving container while riding out its
restarts, and drains before the pod stops.

It is configured by environment, as Knative's queue-proxy is
(SERVING_READINESS_PROBE, QUEUE_SERVING_PORT, USER_PORT, CONTAINER_CONCURRENCY,
REVISION_TIMEOUT_SECONDS, SERVING_*), plus PODGATE_* variables for what
queue-proxy lacks. See docs/gate.md. As queue-proxy, it requires QUEUE_SERVING_PORT,
USER_PORT, CONTAINER_CONCURRENCY, REVISION_TIMEOUT_SECONDS, SERVING_NAMESPACE,
SERVING_CONFIGURATION, SERVING_REVISION, SERVING_POD and SERVING_POD_IP to be
set; a missing or malformed variable exits 1 naming it.

It listens on $SERVING_POD_IP (else $POD_IP) when that is a loopback
address (local mode: every pod has its own), else on every interface. SIGTERM starts the drain; the gate exits once drained.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// A usage error is one whatever the environment holds.
			logger, err := gateLogger(cmd.ErrOrStderr(), logFormat)
			if err != nil {
				return usageErrorf("%v", err)
			}
			cfg, err := gateenv.DecodeEnv(os.LookupEnv)
			if err != nil {
				return invalidf("%v", err)
			}
			host, err := gateListenHost(cfg, os.Getenv)
			if err != nil {
				return invalidf("%v", err)
			}
			if !cmd.Flags().Changed("request-log") {
				if v := os.Getenv(envEnableRequestLog); v != "" {
					on, perr := strconv.ParseBool(v)
					if perr != nil {
						return invalidf("%s: %q is not true or false", envEnableRequestLog, v)
					}
					requestLog = on
				}
			}
			opts := gate.Options{Config: cfg, Logger: logger}
			if requestLog {
				opts.RequestLog = cmd.OutOrStdout()
			}
			switch src := cfg.StatusSource; src {
			case gateenv.StatusSourceNone:
			case gateenv.StatusSourceKubernetes:
				s, err := podstatus.ForCluster(cfg.Namespace, cfg.Pod)
				if err != nil {
					return invalidf("%s: %v", gateenv.EnvStatusSource, err)
				}
				opts.Status = s
				// The same API takes the gate's pod condition.
				if opts.Conditions, err = podstatus.ConditionWriterForCluster(cfg.Namespace, cfg.Pod); err != nil {
					return invalidf("%s: %v", gateenv.EnvStatusSource, err)
				}
			default:
				s, err := podstatus.ForURL(src, cfg.Namespace, cfg.Pod)
				if err != nil {
					return invalidf("%s: %v", gateenv.EnvStatusSource, err)
				}
				defer s.Close()
				opts.Status = s
				if opts.Conditions, err = podstatus.ConditionWriterForURL(src, cfg.Namespace, cfg.Pod); err != nil {
					return invalidf("%s: %v", gateenv.EnvStatusSource, err)
				}
			}
			g, err := gate.New(opts)
			if err != nil {
				return invalidf("%v", err)
			}
			ls, err := gate.Listen(host, cfg)
			if err != nil {
				return invalidf("listen: %v", err)
			}
			parent := cmd.Context()
			if parent == nil {
				parent = context.Background()
			}
			ctx, stop := signal.NotifyContext(parent, syscall.SIGTERM, os.Interrupt)
			defer stop()
			// During the drain a second signal kills at once (default action).
			context.AfterFunc(ctx, stop)
			if err := g.Serve(ctx, ls); err != nil {
				return invalidf("%v", err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&requestLog, "request-log", false, "write one JSON line per request to stdout (default: $"+envEnableRequestLog+")")
	cmd.Flags().StringVar(&logFormat, "log-format", "text", "log format on stderr: text or json")
	cmd.AddCommand(newGateWaitCmd())
	return cmd
}

// gateWaitPoll is how often `podgate gate wait` asks the gate.
const gateWaitPoll = 10 * time.Millisecond

// newGateWaitCmd is the gate's startup probe when it runs as a native
// sidecar: the kubelet starts the pod's other containers once it passes.
// An httpGet probe would do, but its first attempt usually comes before
// the gate listens (always with podgate's node agent, which probes right
// at the start): a "Startup probe failed: connection refused" on every pod
// start, and a whole period (1 s) before the app may start. Waiting here
// passes on the first attempt, as soon as the gate serves.
func newGateWaitCmd() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "wait",
		Short: "Wait until the gate of this container serves (its startup probe)",
		Long: `Wait until the gate configured by this environment answers on its admin
port (` + gateenv.LivezPath + `), at most --timeout. The injector makes it the startup
probe of the gate when the gate runs as a native sidecar: the other containers
start once the gate serves, not once the pod is ready.

Exit status: 0 the gate serves, 1 it did not within --timeout (or the
environment is malformed), 2 usage error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if timeout <= 0 {
				return usageErrorf("--timeout %s: must be positive", timeout)
			}
			cfg, err := gateenv.Decode(os.Getenv)
			if err != nil {
				return invalidf("%v", err)
			}
			host, err := gateListenHost(cfg, os.Getenv)
			if err != nil {
				return invalidf("%v", err)
			}
			if host == "" {
				host = "127.0.0.1" // the gate listens on every interface
			}
			url := "http://" + net.JoinHostPort(host, strconv.Itoa(cfg.AdminPort)) + gateenv.LivezPath
			if err := waitServing(cmd.Context(), url, timeout); err != nil {
				return invalidf("%v", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "the gate serves on %s\n", url)
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 9*time.Second, "give up after this long (keep it below the probe's timeoutSeconds)")
	return cmd
}

// waitServing polls url until it answers 200 or timeout passes.
func waitServing(ctx context.Context, url string, timeout time.Duration) error {
	if ctx == nil {
		ctx = context.Background()
	}
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
		select {
		case <-ctx.Done():
			if last == nil {
				last = ctx.Err()
			}
			return fmt.Errorf("the gate does not serve after %s: %w", timeout, last)
		case <-time.After(gateWaitPoll):
		}
	}
}

// gateListenHost is the pod IP when it is a loopback address: locally
// every pod has its own (127.0.1.N), and a gate must not take its ports on
// every interface. On Kubernetes the pod IP is the pod's own interface and
// "" (every interface) lets callers inside the pod use 127.0.0.1 too, as
// with queue-proxy. The injector sets SERVING_POD_IP in both modes, so the
// address, not its presence, tells them apart.
func gateListenHost(cfg gateenv.Config, getenv func(string) string) (string, error) {
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

func gateLogger(w io.Writer, format string) (*slog.Logger, error) {
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, nil)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, nil)), nil
	}
	return nil, fmt.Errorf("invalid --log-format %q: want text or json", format)
}
