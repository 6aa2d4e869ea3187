package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/podgate/podgate/activator"
	"github.com/podgate/podgate/activator/prommetrics"
	"github.com/podgate/podgate/api"
	"github.com/podgate/podgate/gateenv"
	"github.com/podgate/podgate/localcluster"
	"github.com/podgate/podgate/objstore"
	"github.com/podgate/podgate/podspec"
	"github.com/podgate/podgate/runtime"
)

func init() { register(newRunCmd) }

type runOptions struct {
	manifests manifestFlags
	podCIDR   string
	apiAddr   string
	images    []string
	replicas  int32
	nodeName  string
	noGate    bool
	listen    string
	domain    string
	ports     []servicePortFlag
	// metricsListen, when set, serves the front door's metrics.
	metricsListen string
	// Health checks of the gates by the front door.
	probeInterval, probeTimeout time.Duration
}

func newRunCmd() *cobra.Command {
	var o runOptions
	var servicePorts []string
	cmd := &cobra.Command{
		Use:   "run -f FILE|DIR|-...",
		Short: "Run the pods of Pod, Deployment and Knative Service manifests on this machine",
		Long: `Run the pods of the manifests as local processes, with the kubelet's probes,
restarts and termination, and serve their state on the control API
(podgate get pods|events|endpoints, podgate logs, podgate delete pod).

-f takes a file, a directory (its *.yaml, *.yml and *.json files; -R for
subdirectories too) or - for standard input, as kubectl does.

Every pod gets its own loopback address from --pod-cidr as $POD_IP and
status.podIP; the serving container gets $PORT. A container runs its
command; without one, its image must be known: ghcr.io/podgate/testapp is
this binary's test app, others are mapped with --image NAME=PATH.
Container output is printed prefixed "pod/container | ".

The front door on --listen routes each request by its Host header,
NAME.NAMESPACE.DOMAIN, through the activator to the workload's pods: only
to pods whose every container is ready, holding requests while none is.
A curl line per workload is printed at start (requests sent before a pod is
ready wait for it), and a "ready" line once the first pod takes traffic.

Nothing starts unless every workload can run: all the manifests and flags
are checked first. Ctrl-C (or SIGTERM) stops every pod gracefully —
preStop, SIGTERM, SIGKILL at the grace period — a second Ctrl-C kills them
at once. See docs/running.md.

Exit status: 0 after a clean stop, 1 invalid manifests, something that
cannot run locally or a failed start (an address in use), 2 usage error
(an unknown flag or a malformed flag value).`,
		Example: `  podgate run -f examples/hello.yaml
  podgate run -f examples/local/ --api 127.0.0.1:0 --listen 127.0.0.1:0
  podgate inject --local -f app.yaml | podgate run -f - --no-gate
  podgate run -f app.yaml --image registry.example.com/api=./bin/api --replicas 2`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.checkFlags(cmd.Flags().Changed("replicas"), servicePorts); err != nil {
				return err
			}
			inputs, err := o.manifests.inputs(args, cmd.InOrStdin())
			if err != nil {
				return err
			}
			parent := cmd.Context()
			if parent == nil {
				parent = context.Background()
			}
			return runPods(parent, o, inputs, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	o.manifests.bind(f)
	f.StringVar(&o.podCIDR, "pod-cidr", runtime.DefaultPodCIDR, "loopback range pod IPs come from (inside 127.0.0.0/8)")
	f.StringVar(&o.apiAddr, "api", api.DefaultAddr, "control API address (loopback only; port 0 picks a free one)")
	f.StringArrayVar(&o.images, "image", nil, "NAME=PATH: run containers of image NAME that give no command as PATH; repeat for more")
	f.Int32Var(&o.replicas, "replicas", 0, "run this many pods of every Deployment and Knative Service (default: each one's own)")
	f.StringVar(&o.nodeName, "node-name", "", "node name in spec.nodeName and events (default: this host's name)")
	f.BoolVar(&o.noGate, "no-gate", false, "run the pods as written, without injecting the gate sidecar")
	f.StringVar(&o.listen, "listen", defaultListen, "front door address, routing by Host NAME.NAMESPACE.DOMAIN (loopback only; port 0 picks a free one)")
	f.StringVar(&o.domain, "domain", activator.DefaultDomain, "domain of the front door's hosts and of Knative Services' status.url")
	f.DurationVar(&o.probeInterval, "gate-probe-interval", activator.DefaultProbeInterval, "how often the front door health-checks each pod's gate (Knative's activator: 200ms)")
	f.DurationVar(&o.probeTimeout, "gate-probe-timeout", activator.DefaultProbeTimeout, "bound of one health check of a gate")
	f.StringVar(&o.metricsListen, "metrics-listen", "", "serve the front door's Prometheus metrics on http://ADDR/metrics (loopback only; port 0 picks a free one; default off)")
	f.StringArrayVar(&servicePorts, "service-port", nil, "[NAMESPACE/]NAME=PORT: also serve workload NAME on its own PORT of the --listen host, whatever the Host header; repeat for more")
	return cmd
}

// checkFlags refuses malformed flag values as usage errors (exit 2),
// before any file is read: a value that is wrong as written is a usage
// error whatever the manifests say. What depends on the world (an image
// path that does not exist, an address in use) is checked later, as
// invalid input (exit 1).
func (o *runOptions) checkFlags(replicasSet bool, servicePorts []string) error {
	if !replicasSet {
		o.replicas = -1
	} else if o.replicas < 0 {
		return usageErrorf("--replicas %d: must not be negative", o.replicas)
	}
	if errs := validation.IsDNS1123Subdomain(o.domain); len(errs) > 0 {
		return usageErrorf("--domain %q: %s", o.domain, strings.Join(errs, "; "))
	}
	if o.nodeName != "" {
		if errs := validation.IsDNS1123Subdomain(o.nodeName); len(errs) > 0 {
			return usageErrorf("--node-name %q: %s", o.nodeName, strings.Join(errs, "; "))
		}
	}
	if o.probeInterval <= 0 || o.probeTimeout <= 0 {
		return usageErrorf("--gate-probe-interval and --gate-probe-timeout must be positive (got %s and %s)", o.probeInterval, o.probeTimeout)
	}
	if err := runtime.CheckPodCIDR(o.podCIDR); err != nil {
		return usageErrorf("%v", err)
	}
	if err := checkLoopbackAddr("--api", o.apiAddr, api.DefaultAddr); err != nil {
		return err
	}
	if err := checkLoopbackAddr("--listen", o.listen, defaultListen); err != nil {
		return err
	}
	if o.metricsListen != "" {
		if err := checkLoopbackAddr("--metrics-listen", o.metricsListen, "127.0.0.1:9090"); err != nil {
			return err
		}
	}
	for _, im := range o.images {
		if name, path, ok := strings.Cut(im, "="); !ok || name == "" || path == "" {
			return usageErrorf("--image %q: want NAME=PATH, e.g. --image ghcr.io/acme/api=./bin/api", im)
		}
	}
	ports, err := parseServicePorts(servicePorts)
	if err != nil {
		return err
	}
	o.ports = ports
	return nil
}

// checkLoopbackAddr checks a HOST:PORT flag of a server that has no
// authentication, so listens on loopback only; the port is a number, 0
// picking a free one.
func checkLoopbackAddr(flag, addr, example string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usageErrorf("%s %q: want HOST:PORT on loopback, e.g. %s (port 0 picks a free one)", flag, addr, example)
	}
	if host == "localhost" {
		host = "127.0.0.1"
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return usageErrorf("%s %q: listens on loopback only (127.0.0.0/8 or ::1, e.g. %s): it has no authentication", flag, addr, example)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return usageErrorf("%s %q: port %q must be a number from 0 (any free port) to 65535", flag, addr, port)
	}
	return nil
}

// injectGates puts the gate sidecar into every workload's pods, pointing
// its status source at the control API on apiAddr.
func injectGates(ws []*podspec.Workload, apiAddr string) ([]*podspec.Workload, error) {
	out := make([]*podspec.Workload, 0, len(ws))
	for _, w := range ws {
		injected, err := podspec.Inject(w, podspec.Options{Local: true, APIAddr: apiAddr})
		if err != nil {
			return nil, err
		}
		out = append(out, injected)
	}
	return out, nil
}

// parseImages turns --image NAME=PATH flags (their syntax checked with the
// flags) into entrypoints; a path that is no executable is invalid input.
func parseImages(flags []string) (runtime.Images, error) {
	im, err := runtime.DefaultImages()
	if err != nil {
		return im, err
	}
	for _, f := range flags {
		name, path, _ := strings.Cut(f, "=")
		abs, err := filepath.Abs(path)
		if err != nil {
			return im, fmt.Errorf("--image %s: %w", f, err)
		}
		if st, err := os.Stat(abs); err != nil {
			return im, fmt.Errorf("--image %s: %w", f, err)
		} else if st.IsDir() || st.Mode()&0o111 == 0 {
			return im, fmt.Errorf("--image %s: %s is not an executable file", f, abs)
		}
		im.Set(name, abs)
	}
	return im, nil
}

// lockedWriter serializes writes of several goroutines to one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func runPods(parent context.Context, o runOptions, inputs []podspec.Input, stdout, stderr io.Writer) error {
	// podgate's lines, its logger and the front door write from several
	// goroutines.
	stderr = &lockedWriter{w: stderr}
	images, err := parseImages(o.images)
	if err != nil {
		return invalidf("%v", err)
	}
	m, problems, err := loadAndValidate(inputs)
	if err != nil {
		return invalidf("%v", err)
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(stderr, p.Error())
		}
		return invalidf("%d problem(s) in the manifests; nothing was started (see podgate validate)", len(problems))
	}
	if len(m.Workloads) == 0 {
		return invalidf("no Pod, Deployment or Knative Service in %s", describeInputs(inputs))
	}
	for _, s := range m.Skipped {
		fmt.Fprintf(stderr, "note: %s: %s %s/%s: skipped, podgate runs Pods, Deployments and Knative Services\n",
			s.Source, s.APIVersion, s.Kind, s.Name)
	}

	logger := slog.New(slog.NewTextHandler(stderr, nil))
	store := objstore.New(objstore.Options{})
	// The front door is made after the agent (it needs the injected
	// workloads); service status reads its counts once it exists.
	serving := &lateServingView{}
	// The API server's side of the pods: a DELETE marks the pod, the
	// agent sees it and terminates the pod.
	pods := localcluster.NewPods(store, nil, logger)
	opts := runtime.Options{
		Store:    store,
		Pods:     pods,
		Source:   pods,
		PodCIDR:  o.podCIDR,
		Images:   images,
		Output:   stdout,
		Logger:   logger,
		NodeName: o.nodeName,
		Domain:   o.domain,
		Serving:  serving,
	}
	if o.replicas >= 0 {
		r := o.replicas
		opts.Replicas = &r
	}
	agent, err := runtime.New(opts)
	if err != nil {
		return invalidf("%v", err)
	}
	// Until the pods start, every failure leaves nothing behind: close
	// what is open, in reverse order.
	var opened []io.Closer
	fail := func(err error) error {
		for i := len(opened) - 1; i >= 0; i-- {
			_ = opened[i].Close()
		}
		_ = agent.Shutdown(context.Background())
		return invalidf("%v", err)
	}
	// Everything that depends on the manifests alone, before any address
	// is taken. The workloads as written first, so that a problem names
	// the container the user wrote (the gate is not in the file).
	if err := agent.Check(m.Workloads); err != nil {
		return fail(err)
	}
	var routed []*podspec.Workload
	if !o.noGate {
		routed = m.Workloads
	}
	if _, err := checkRoutes(routed, o.domain, o.ports); err != nil {
		return fail(err)
	}

	ln, err := api.Listen(o.apiAddr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fail(fmt.Errorf("%w: is another 'podgate run' using it? Choose another address with --api (port 0 picks a free one)", err))
		}
		return fail(err)
	}
	opened = append(opened, ln)
	workloads := m.Workloads
	if !o.noGate {
		// Every pod gets the gate in front of its serving container, the
		// same rewrite the Kubernetes webhook applies; its status source is
		// this agent's control API (for exec readiness it cannot run).
		workloads, err = injectGates(m.Workloads, ln.Addr().String())
		if err != nil {
			return fail(err)
		}
		if err := agent.Check(workloads); err != nil {
			return fail(err)
		}
	}
	doorLn, err := listenFrontDoor(o.listen)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fail(fmt.Errorf("%w: is another 'podgate run' using it? Choose another address with --listen (port 0 picks a free one)", err))
		}
		return fail(err)
	}
	opened = append(opened, doorLn)
	doorCfg := frontDoorConfig{
		store: store, workloads: workloads, domain: o.domain, servicePorts: o.ports,
		probeInterval: o.probeInterval, probeTimeout: o.probeTimeout,
		onChange: agent.ResyncService, logger: logger, stderr: stderr,
	}
	var metrics *metricsServer
	if o.metricsListen != "" {
		var m *prommetrics.Metrics
		metrics, m, err = newMetrics(o.metricsListen, logger)
		if err != nil {
			return fail(err)
		}
		opened = append(opened, metrics)
		doorCfg.metrics = m
	}
	door, err := newFrontDoor(doorLn, doorCfg)
	if err != nil {
		return fail(err)
	}
	serving.door.Store(door)

	// First SIGINT/SIGTERM: graceful stop. Second: kill at once.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)

	apiCtx, stopAPI := context.WithCancel(context.WithoutCancel(parent))
	defer stopAPI()
	srv := api.NewServer(api.Config{Store: store, Pods: pods, Logs: agent, Logger: logger})
	apiDone := make(chan error, 1)
	go func() { apiDone <- srv.Serve(apiCtx, ln) }()
	fmt.Fprintf(stderr, "podgate: control API on http://%s (podgate get pods --api %s)\n", ln.Addr(), ln.Addr())
	if metrics != nil {
		metrics.start()
		fmt.Fprintf(stderr, "podgate: front door metrics on http://%s/metrics\n", metrics.ln.Addr())
	}
	// Serving before the pods start: early requests wait for a ready pod.
	door.start()

	var runErr error
	if err := agent.Start(workloads); err != nil {
		runErr = invalidf("%v", err)
	} else {
		for _, w := range workloads {
			via := "no gate"
			if w.IsInjected() {
				via = fmt.Sprintf("through the gate on port %d", gateenv.DefaultServingPort)
			}
			fmt.Fprintf(stderr, "podgate: running %s (namespace %s, serving container %s on port %d, %s)\n",
				w.ID(), w.Namespace, w.ServingContainer, w.ServingPort, via)
		}
		door.printCurls(stderr)
		select {
		case sig := <-sigs:
			fmt.Fprintf(stderr, "podgate: %s: stopping pods gracefully (again to kill them now)\n", sig)
		case <-parent.Done():
		case err := <-apiDone:
			apiDone <- err
			runErr = invalidf("%v", err)
		case err := <-door.served:
			runErr = invalidf("front door: %v", err)
		}
	}
	door.beginShutdown()

	shutdownCtx, force := context.WithCancel(context.Background())
	defer force()
	go func() {
		select {
		case sig := <-sigs:
			fmt.Fprintf(stderr, "podgate: %s: killing pods now\n", sig)
			force()
		case <-shutdownCtx.Done():
		}
	}()
	start := time.Now()
	if err := agent.Shutdown(shutdownCtx); err != nil {
		fmt.Fprintf(stderr, "podgate: %v\n", err)
	}
	fmt.Fprintf(stderr, "podgate: all pods stopped in %s\n", time.Since(start).Round(time.Millisecond))
	if err := door.finish(); err != nil {
		fmt.Fprintf(stderr, "podgate: front door: %v\n", err)
	}
	if metrics != nil {
		if err := metrics.stop(); err != nil {
			fmt.Fprintf(stderr, "podgate: metrics: %v\n", err)
		}
	}
	force()
	stopAPI()
	if err := <-apiDone; err != nil && runErr == nil {
		fmt.Fprintf(stderr, "podgate: %v\n", err)
	}
	return runErr
}
