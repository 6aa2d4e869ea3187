package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/podgate/podgate/activator"
	"github.com/podgate/podgate/activator/server"
	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/cmd/podgate/internal/cmdflags"
	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/internal/loopback"
	"github.com/podgate/podgate/local"
	"github.com/podgate/podgate/local/apiserver"
	"github.com/podgate/podgate/node"
	"github.com/podgate/podgate/node/images"
	"github.com/podgate/podgate/record"
	"github.com/podgate/podgate/record/timeline/live"
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
	// imageLayout is an OCI image layout whose images containers run.
	imageLayout string
	// metricsListen, when set, serves the front door's metrics.
	metricsListen string
	// Health checks of the gates by the front door.
	probeInterval, probeTimeout time.Duration
	// record is --record FILE and --record-limit.
	record cmdflags.RecordFlags
	// ui, when set, serves the live timeline.
	ui string
}

func newRunCmd() *cobra.Command {
	o := runOptions{record: cmdflags.RecordFlags{FileFlag: "--record"}}
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
found in the OCI image layout of --image-layout (hack/image.sh).
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

--record FILE writes what happened as one ordered stream of facts: every
probe attempt, container state, event, pod condition, EndpointSlice
endpoint, the gate's verdict, the front door's routing decisions and every
request (docs/timeline.md). It is flushed every 200 ms and on the stop,
Ctrl-C included, and bounded by --record-limit.

Exit status: 0 after a clean stop, 1 invalid manifests, something that
cannot run locally or a failed start (an address in use), 2 usage error
(an unknown flag or a malformed flag value).`,
		Example: `  podgate run -f examples/hello.yaml
  podgate run -f examples/local/ --api 127.0.0.1:0 --listen 127.0.0.1:0
  podgate inject --local -f app.yaml | podgate run -f - --no-gate
  podgate run -f app.yaml --image registry.example.com/api=./bin/api --replicas 2`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := o.config(cmd.Flags().Changed("replicas"), servicePorts)
			if err != nil {
				return err
			}
			if err := o.record.Check(cmd.Flags().Changed("record-limit")); err != nil {
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
			return runPods(parent, o, cfg, inputs, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	o.bind(cmd.Flags(), &servicePorts)
	return cmd
}

// bind binds run's flags to o and servicePorts.
func (o *runOptions) bind(f *pflag.FlagSet, servicePorts *[]string) {
	o.manifests.bind(f)
	f.StringVar(&o.podCIDR, "pod-cidr", node.DefaultPodCIDR, "loopback range pod IPs come from (inside 127.0.0.0/8)")
	f.StringVar(&o.apiAddr, "api", apiserver.DefaultAddr, "control API address (loopback only; port 0 picks a free one)")
	f.StringArrayVar(&o.images, "image", nil, "NAME=PATH: run containers of image NAME that give no command as PATH; repeat for more")
	f.StringVar(&o.imageLayout, "image-layout", "", cmdflags.ImageLayoutUsage)
	f.Int32Var(&o.replicas, "replicas", 0, "run this many pods of every Deployment and Knative Service (default: each one's own)")
	f.StringVar(&o.nodeName, "node-name", "", "node name in spec.nodeName and events (default: this host's name)")
	f.BoolVar(&o.noGate, "no-gate", false, "run the pods as written, without injecting the gate sidecar")
	f.StringVar(&o.listen, "listen", contract.FrontDoorAddr, "front door address, routing by Host NAME.NAMESPACE.DOMAIN (loopback only; port 0 picks a free one)")
	f.StringVar(&o.domain, "domain", activator.DefaultDomain, "domain of the front door's hosts and of Knative Services' status.url")
	f.DurationVar(&o.probeInterval, "gate-probe-interval", activator.DefaultProbeInterval, "how often the front door health-checks each pod's gate (Knative's activator: 200ms)")
	f.DurationVar(&o.probeTimeout, "gate-probe-timeout", activator.DefaultProbeTimeout, "bound of one health check of a gate")
	f.StringVar(&o.metricsListen, "metrics-listen", "", "serve the front door's Prometheus metrics on http://ADDR/metrics (loopback only; port 0 picks a free one; default off)")
	f.StringVar(&o.ui, "ui", "", "serve the live timeline of probes, endpoints and requests on http://ADDR (loopback only; port 0 picks a free one; default off)")
	f.StringArrayVar(servicePorts, "service-port", nil, "[NAMESPACE/]NAME=PORT: also serve workload NAME on its own PORT of the --listen host, whatever the Host header; repeat for more")
	f.StringVar(&o.record.File, "record", "", "record the run into FILE: every probe attempt, container state, event, pod condition, endpoint, gate verdict, routing decision and request, as JSON lines (docs/timeline.md)")
	o.record.BindLimit(f)
}

// uiFacts is how many facts the live timeline keeps: minutes of a busy
// run (the requests are most of them), a few tens of MB at most.
const uiFacts = 100_000

// config turns the flags into local's Config and refuses malformed
// values as usage errors (exit 2), before any file is read: a value that
// is wrong as written is a usage error whatever the manifests say. What
// depends on the world (an image path that does not exist, an address in
// use) is checked later, as invalid input (exit 1).
func (o *runOptions) config(replicasSet bool, servicePorts []string) (local.Config, error) {
	cfg := local.Config{
		PodCIDR: o.podCIDR, APIAddr: o.apiAddr, NodeName: o.nodeName, NoGate: o.noGate, Listen: o.listen, Domain: o.domain,
		ProbeInterval: o.probeInterval, ProbeTimeout: o.probeTimeout, MetricsListen: o.metricsListen,
	}
	if replicasSet {
		r := o.replicas
		cfg.Replicas = &r
	}
	if err := cfg.Check(); err != nil {
		return cfg, usageErrorf("%v", err)
	}
	if err := cmdflags.CheckImageFlags(o.images); err != nil {
		return cfg, err
	}
	if o.ui != "" {
		if _, err := loopback.Check(o.ui); err != nil {
			return cfg, usageErrorf("--ui %q: %v (e.g. 127.0.0.1:9800; port 0 picks a free one)", o.ui, err)
		}
	}
	for _, raw := range servicePorts {
		p, err := server.ParseServicePort(raw)
		if err != nil {
			return cfg, usageErrorf("%v", err)
		}
		cfg.ServicePorts = append(cfg.ServicePorts, p)
	}
	return cfg, nil
}

func runPods(ctx context.Context, o runOptions, cfg local.Config, inputs []workload.Input, stdout, stderr io.Writer) (err error) {
	im, err := images.FromFlags(o.images)
	if err != nil {
		return invalidf("%v", err)
	}
	if im, err = cmdflags.WithImageLayout(im, o.imageLayout); err != nil {
		return invalidf("%v", err)
	}
	workloads, err := local.LoadWorkloads(inputs, stderr)
	if err != nil {
		return invalidf("%v", err)
	}
	cfg.Workloads, cfg.Images, cfg.Stdout, cfg.Stderr = workloads, im, stdout, stderr
	if o.record.File != "" {
		rec, openErr := o.record.Open("podgate run", stderr)
		if openErr != nil {
			return openErr
		}
		cfg.Recorder = rec
		// Run has stopped everything that records when it returns, after
		// Ctrl-C too: the close flushes the last facts.
		defer func() {
			if cerr := rec.Close(); cerr != nil && err == nil {
				err = invalidf("%v", cerr)
			}
		}()
	}
	if o.ui != "" {
		// The live view reads the facts from memory, besides any recording.
		facts := record.NewLog(uiFacts)
		ui, err := live.Listen(o.ui, facts, record.Header{Source: "podgate run"})
		if err != nil {
			return invalidf("%v", err)
		}
		defer ui.Close()
		var sink record.Sink = facts
		if cfg.Recorder != nil {
			sink = record.Tee(cfg.Recorder, facts)
		}
		cfg.Recorder = sink
		fmt.Fprintf(stderr, "podgate: timeline on %s\n", ui.URL())
	}
	if err := local.Run(ctx, cfg); err != nil {
		return invalidf("%v", err)
	}
	return nil
}
