package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	apivalidation "k8s.io/apimachinery/pkg/util/validation"

	"github.com/podgate/podgate/activator"
	"github.com/podgate/podgate/api"
	"github.com/podgate/podgate/frontdoor"
	"github.com/podgate/podgate/localrun"
	"github.com/podgate/podgate/podspec"
	"github.com/podgate/podgate/podspec/validation"
	"github.com/podgate/podgate/runtime"
	"github.com/podgate/podgate/runtime/images"
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
	ports     []frontdoor.ServicePort
	// imageLayout is an OCI image layout whose images containers run.
	imageLayout string
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
this binary's test app, others are mapped with --image NAME=PATH or
found in the OCI image layout of --image-layout (scripts/image.sh).
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
	f.StringVar(&o.imageLayout, "image-layout", "", imageLayoutUsage)
	f.Int32Var(&o.replicas, "replicas", 0, "run this many pods of every Deployment and Knative Service (default: each one's own)")
	f.StringVar(&o.nodeName, "node-name", "", "node name in spec.nodeName and events (default: this host's name)")
	f.BoolVar(&o.noGate, "no-gate", false, "run the pods as written, without injecting the gate sidecar")
	f.StringVar(&o.listen, "listen", frontdoor.DefaultListen, "front door address, routing by Host NAME.NAMESPACE.DOMAIN (loopback only; port 0 picks a free one)")
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
	if errs := apivalidation.IsDNS1123Subdomain(o.domain); len(errs) > 0 {
		return usageErrorf("--domain %q: %s", o.domain, strings.Join(errs, "; "))
	}
	if o.nodeName != "" {
		if errs := apivalidation.IsDNS1123Subdomain(o.nodeName); len(errs) > 0 {
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
	if err := checkLoopbackAddr("--listen", o.listen, frontdoor.DefaultListen); err != nil {
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

func runPods(ctx context.Context, o runOptions, inputs []podspec.Input, stdout, stderr io.Writer) error {
	im, err := images.FromFlags(o.images)
	if err != nil {
		return invalidf("%v", err)
	}
	if im, err = withImageLayout(im, o.imageLayout); err != nil {
		return invalidf("%v", err)
	}
	m, problems, err := validation.LoadInputs(inputs...)
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
	cfg := localrun.Config{
		Workloads: m.Workloads, PodCIDR: o.podCIDR, APIAddr: o.apiAddr, Images: im,
		NodeName: o.nodeName, NoGate: o.noGate, Listen: o.listen, Domain: o.domain,
		ServicePorts: o.ports, ProbeInterval: o.probeInterval, ProbeTimeout: o.probeTimeout,
		MetricsListen: o.metricsListen, Stdout: stdout, Stderr: stderr,
	}
	if o.replicas >= 0 {
		r := o.replicas
		cfg.Replicas = &r
	}
	if err := localrun.Run(ctx, cfg); err != nil {
		return invalidf("%v", err)
	}
	return nil
}

// parseServicePorts checks the flags' syntax; which workload each names is
// checked once the manifests are loaded.
func parseServicePorts(flags []string) ([]frontdoor.ServicePort, error) {
	var out []frontdoor.ServicePort
	for _, raw := range flags {
		ref, portStr, ok := strings.Cut(raw, "=")
		if !ok || ref == "" || portStr == "" {
			return nil, usageErrorf("--service-port %q: want [NAMESPACE/]NAME=PORT, e.g. --service-port hello=8081", raw)
		}
		p := frontdoor.ServicePort{Raw: raw, Name: ref}
		if ns, name, ok := strings.Cut(ref, "/"); ok {
			p.Namespace, p.Name = ns, name
			if errs := apivalidation.IsDNS1123Label(ns); len(errs) > 0 {
				return nil, usageErrorf("--service-port %q: namespace %q: %s", raw, ns, strings.Join(errs, "; "))
			}
		}
		if errs := apivalidation.IsDNS1123Subdomain(p.Name); len(errs) > 0 {
			return nil, usageErrorf("--service-port %q: name %q: %s", raw, p.Name, strings.Join(errs, "; "))
		}
		port, err := strconv.Atoi(portStr)
		if err != nil || port < 0 || port > 65535 {
			return nil, usageErrorf("--service-port %q: port %q: must be a number from 0 (any free port) to 65535", raw, portStr)
		}
		p.Port = port
		out = append(out, p)
	}
	return out, nil
}
