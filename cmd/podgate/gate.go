package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/podgate/podgate/gate"
	"github.com/podgate/podgate/gate/agentstatus"
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
				// The API server watch is not built yet: delegated
				// containers cannot count as ready, and the gate says so.
				if len(cfg.DelegatedReadiness) > 0 {
					logger.Error("status source \"kubernetes\" is not supported yet: delegated containers will not count as ready",
						"containers", cfg.DelegatedReadiness)
				}
			default:
				s, err := agentstatus.New(src, cfg.Namespace, cfg.Pod)
				if err != nil {
					return invalidf("%s: %v", gateenv.EnvStatusSource, err)
				}
				defer s.Close()
				opts.Status = s
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
	return cmd
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
