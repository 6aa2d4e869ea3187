package inject

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podgate/podgate/admission/validation"
	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/gate/contract"
)

// injected loads, validates and injects one workload, and decodes the
// gate's configuration from the injected pod.
func injected(t *testing.T, manifest string, opts Options) (*workload.Workload, contract.Config) {
	t.Helper()
	w := one(t, manifest)
	if errs := validation.Validate(w); len(errs) > 0 {
		t.Fatalf("invalid: %v", errs)
	}
	iw, err := Gate(w, opts)
	if err != nil {
		t.Fatal(err)
	}
	gate := iw.Container(contract.GateContainerName)
	if gate == nil {
		t.Fatal("no gate container")
	}
	env := resolveEnv(t, gate.Env, map[string]string{"metadata.name": "p", "metadata.namespace": "shop", "status.podIP": "127.0.1.9", "status.hostIP": "10.0.0.9"})
	cfg, err := contract.Decode(func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("gate env: %v", err)
	}
	return iw, cfg
}

func TestInjectReadiness(t *testing.T) {
	t.Run("in a Knative Service network readiness probes move into the gate, serving container first", func(t *testing.T) {
		m := ksvc("      - name: side\n        image: i\n        readinessProbe: {httpGet: {path: /s, port: 9001}, periodSeconds: 4}\n" +
			"      - name: main\n        image: i\n        ports: [{containerPort: 8080}]\n        readinessProbe: {tcpSocket: {}, periodSeconds: 6}\n")
		w, cfg := injected(t, m, Options{})
		assertStrings(t, "readiness containers", cfg.ReadinessContainers, []string{"main", "side"}, false)
		if p := cfg.ReadinessProbes[0]; p.TCPSocket == nil || p.TCPSocket.Port != intstr.FromInt32(8080) || p.TCPSocket.Host != "127.0.0.1" || p.PeriodSeconds != 6 {
			t.Errorf("serving probe %+v, want tcp 127.0.0.1:8080 every 6s", p)
		}
		if p := cfg.ReadinessProbes[1]; p.HTTPGet == nil || p.HTTPGet.Path != "/s" || p.HTTPGet.Port != intstr.FromInt32(9001) || p.HTTPGet.Host != "127.0.0.1" {
			t.Errorf("sidecar probe %+v", p)
		}
		for _, name := range []string{"main", "side"} {
			if w.Container(name).ReadinessProbe != nil {
				t.Errorf("%s kept its readiness probe; the gate runs it now", name)
			}
		}
		if !cfg.MultiContainerProbes {
			t.Error("ENABLE_MULTI_CONTAINER_PROBES not set")
		}
		if got := w.Container(contract.GateContainerName).ReadinessProbe.PeriodSeconds; got != 4 {
			t.Errorf("gate readiness period %d, want the fastest container's 4 (Knative would copy the serving container's 6)", got)
		}
	})
	t.Run("in a Knative Service exec readiness stays and is delegated; the serving one gets a TCP check in the gate", func(t *testing.T) {
		m := ksvc("      - name: main\n        image: i\n        ports: [{containerPort: 8080}]\n        readinessProbe: {exec: {command: [cat, /r]}, periodSeconds: 2}\n" +
			"      - name: side\n        image: i\n        readinessProbe: {exec: {command: [cat, /s]}}\n")
		w, cfg := injected(t, m, Options{})
		assertStrings(t, "delegated", cfg.DelegatedReadiness, []string{"main", "side"}, false)
		assertStrings(t, "readiness containers", cfg.ReadinessContainers, []string{"main"}, false)
		if p := cfg.ReadinessProbes[0]; p.TCPSocket == nil || p.TCPSocket.Port != intstr.FromInt32(8080) || p.PeriodSeconds != 2 {
			t.Errorf("serving substitute %+v, want tcp :8080 with the exec probe's period", p)
		}
		for _, name := range []string{"main", "side"} {
			if p := w.Container(name).ReadinessProbe; p == nil || p.Exec == nil {
				t.Errorf("%s lost its exec readiness probe", name)
			}
		}
		if cfg.StatusSource != "http://10.0.0.9:9026" {
			t.Errorf("status source %q, want the node status service on the node's address", cfg.StatusSource)
		}
	})
	t.Run("a pod's serving container without readiness probe gets none in the gate: ready as on Kubernetes", func(t *testing.T) {
		w, cfg := injected(t, podWith(""), Options{})
		if len(cfg.ReadinessProbes) != 0 || len(cfg.DelegatedReadiness) != 0 {
			t.Fatalf("gate probes %+v, delegated %v; want none: the user wrote no readiness probe", cfg.ReadinessProbes, cfg.DelegatedReadiness)
		}
		assertStrings(t, "containers (serving first)", cfg.Containers, []string{"app"}, false)
		if w.Container("app").ReadinessProbe != nil {
			t.Error("the container got a readiness probe")
		}
		if got := w.Container(contract.GateContainerName).ReadinessProbe.PeriodSeconds; got != 1 {
			t.Errorf("gate period %d, want 1", got)
		}
	})
	t.Run("a pod's exec-probed serving container is delegated, with no TCP check of its port", func(t *testing.T) {
		w, cfg := injected(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"+
			"  - {name: side, image: img, readinessProbe: {tcpSocket: {port: 9100}, periodSeconds: 3}}\n"+
			"  - {name: app, image: img, ports: [{containerPort: 8080}], readinessProbe: {exec: {command: [cat, /r]}, periodSeconds: 2}}\n", Options{})
		assertStrings(t, "delegated", cfg.DelegatedReadiness, []string{"app"}, false)
		assertStrings(t, "readiness containers", cfg.ReadinessContainers, []string{"side"}, false)
		assertStrings(t, "containers (serving first)", cfg.Containers, []string{"app", "side"}, false)
		if p := w.Container("app").ReadinessProbe; p == nil || p.Exec == nil {
			t.Error("the serving container lost its exec readiness probe")
		}
		if p := w.Container("side").ReadinessProbe; p == nil || p.TCPSocket == nil || p.PeriodSeconds != 3 {
			t.Errorf("side's readiness probe %+v, want its own tcp probe kept", p)
		}
		if got := w.Container(contract.GateContainerName).ReadinessProbe.PeriodSeconds; got != 1 {
			t.Errorf("gate period %d, want 1: the gate's probe answers for the gate alone", got)
		}
	})
	t.Run("a Deployment's readiness probes stay on their containers and the gate runs copies, serving container first", func(t *testing.T) {
		w, cfg := injected(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  selector: {matchLabels: {app: d}}\n  template:\n    metadata: {labels: {app: d}}\n    spec:\n      containers:\n"+
			"      - {name: side, image: i, readinessProbe: {httpGet: {path: /s, port: 9001}, periodSeconds: 4}}\n"+
			"      - {name: main, image: i, ports: [{name: http, containerPort: 8080}], readinessProbe: {tcpSocket: {port: http}, periodSeconds: 6}}\n", Options{})
		assertStrings(t, "readiness containers", cfg.ReadinessContainers, []string{"main", "side"}, false)
		if p := cfg.ReadinessProbes[0]; p.TCPSocket == nil || p.TCPSocket.Port != intstr.FromInt32(8080) || p.TCPSocket.Host != "127.0.0.1" || p.PeriodSeconds != 6 {
			t.Errorf("gate's copy of the serving probe %+v, want tcp 127.0.0.1:8080 every 6s", p)
		}
		if p := w.Container("main").ReadinessProbe; p == nil || p.TCPSocket == nil || p.TCPSocket.Port != intstr.FromString("http") || p.TCPSocket.Host != "" {
			t.Errorf("main's own probe %+v, want it as written (named port, no host)", p)
		}
		if p := w.Container("side").ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/s" || p.PeriodSeconds != 4 {
			t.Errorf("side's own probe %+v, want it as written", p)
		}
		rp := w.Container(contract.GateContainerName).ReadinessProbe
		if rp.HTTPGet == nil || rp.HTTPGet.Path != contract.GateReadyPath || rp.HTTPGet.Port != intstr.FromInt32(contract.GateAdminPort) || rp.PeriodSeconds != 1 {
			t.Errorf("gate readiness %+v, want GET :8022/readyz/gate every second (the gate alone, not the fastest container's period)", rp)
		}
	})
	t.Run("a Knative Service's serving container is always checked on its port", func(t *testing.T) {
		_, cfg := injected(t, svcWith("readinessProbe: {exec: {command: [cat, /r]}}", ""), Options{})
		if len(cfg.ReadinessProbes) != 1 || cfg.ReadinessProbes[0].TCPSocket == nil || cfg.ReadinessContainers[0] != "app" {
			t.Errorf("gate probes %+v of %v, want the serving container's TCP check", cfg.ReadinessProbes, cfg.ReadinessContainers)
		}
	})
	t.Run("named ports are resolved for the gate", func(t *testing.T) {
		_, cfg := injected(t, podWith("readinessProbe: {httpGet: {port: http}}"), Options{})
		if p := cfg.ReadinessProbes[0].HTTPGet.Port; p != intstr.FromInt32(8080) {
			t.Errorf("port %v, want 8080", p)
		}
	})
	t.Run("a host the user set is kept", func(t *testing.T) {
		_, cfg := injected(t, podWith("readinessProbe: {httpGet: {port: 8080, host: example.test}}"), Options{})
		if h := cfg.ReadinessProbes[0].HTTPGet.Host; h != "example.test" {
			t.Errorf("host %q, want example.test", h)
		}
	})
}

func TestInjectLeavesLivenessAndStartupOnTheirContainersAndTheGateWatchesLiveness(t *testing.T) {
	m := podWith("livenessProbe: {httpGet: {path: /l, port: http}, initialDelaySeconds: 2, periodSeconds: 3, timeoutSeconds: 4, failureThreshold: 5, terminationGracePeriodSeconds: 6}\n" +
		"startupProbe: {grpc: {port: 9000}, periodSeconds: 1, failureThreshold: 30}")
	w, cfg := injected(t, m, Options{})
	c := w.Container("app")
	l := c.LivenessProbe
	if l.HTTPGet == nil || l.HTTPGet.Path != "/l" || l.HTTPGet.Port != intstr.FromString("http") || l.HTTPGet.Host != "" {
		t.Fatalf("liveness handler %+v, want the container's own GET http/l, untouched", l.HTTPGet)
	}
	if l.InitialDelaySeconds != 2 || l.PeriodSeconds != 3 || l.TimeoutSeconds != 4 || l.FailureThreshold != 5 || *l.TerminationGracePeriodSeconds != 6 {
		t.Errorf("liveness timing not kept: %+v", l)
	}
	if s := c.StartupProbe; s.GRPC == nil || s.GRPC.Port != 9000 || s.FailureThreshold != 30 {
		t.Errorf("startup %+v, want the container's own grpc probe", s)
	}
	if cfg.ProbesRouted {
		t.Error("the injection wrote PODGATE_ROUTED_PROBES; it writes PODGATE_WATCHED_PROBES now")
	}
	watched := cfg.WatchedProbes["app"]
	if watched.Liveness == nil || watched.Liveness.HTTPGet.Path != "/l" || watched.Liveness.HTTPGet.Port != intstr.FromInt32(8080) ||
		watched.Liveness.HTTPGet.Host != "127.0.0.1" || watched.Liveness.FailureThreshold != 5 || watched.Liveness.PeriodSeconds != 3 {
		t.Errorf("watched liveness %+v, want the probe with its timing and the port resolved", watched.Liveness)
	}
	if watched.Startup != nil {
		t.Errorf("watched startup %+v, want none: the container's status says whether it started", watched.Startup)
	}
}

func TestInjectExcludesTheContainersTheAnnotationNames(t *testing.T) {
	m := "apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: {podgate.dev/exclude-containers: 'log-shipper, sc'}}\nspec:\n" +
		"  initContainers:\n  - {name: sc, image: i, restartPolicy: Always, readinessProbe: {tcpSocket: {port: 9}}}\n  containers:\n" +
		"  - {name: app, image: i, ports: [{containerPort: 8080}], readinessProbe: {tcpSocket: {port: 8080}}}\n" +
		"  - {name: log-shipper, image: i, readinessProbe: {httpGet: {port: 9100}}, livenessProbe: {httpGet: {port: 9100}}}\n"
	w, cfg := injected(t, m, Options{})
	assertStrings(t, "containers", cfg.Containers, []string{"app"}, false)
	assertStrings(t, "readiness containers", cfg.ReadinessContainers, []string{"app"}, false)
	assertStrings(t, "excluded", cfg.ExcludedContainers, []string{"log-shipper", "sc"}, false)
	if _, ok := cfg.WatchedProbes["log-shipper"]; ok {
		t.Error("the gate watches an excluded container's liveness")
	}
	if p := w.Container("log-shipper").ReadinessProbe; p == nil || p.HTTPGet == nil {
		t.Errorf("log-shipper's own probe %+v, want it kept", p)
	}
	if h := w.Container("log-shipper").Lifecycle; h == nil || h.PreStop == nil {
		t.Error("an excluded container lost its drain hook: exclusion is about readiness, not the drain")
	}
}

func TestInjectLeavesExecLivenessOnItsContainer(t *testing.T) {
	w, cfg := injected(t, podWith("livenessProbe: {exec: {command: [cat, /x]}}"), Options{})
	if p := w.Container("app").LivenessProbe; p.Exec == nil {
		t.Errorf("exec liveness rewritten to %+v", p)
	}
	if _, ok := cfg.WatchedProbes["app"]; ok {
		t.Error("exec liveness recorded as watched")
	}
	if warns := one(t, podWith("livenessProbe: {exec: {command: [cat, /x]}}")).Warnings(); len(warns) != 1 || !strings.Contains(warns[0], "livenessProbe: exec probes stay") {
		t.Errorf("warnings %q", warns)
	}
}

func TestInjectDrainHooks(t *testing.T) {
	m := "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  initContainers:\n  - {name: sc, image: i, restartPolicy: Always, livenessProbe: {tcpSocket: {port: 9}}}\n  containers:\n" +
		"  - {name: a, image: i, ports: [{containerPort: 8080}], lifecycle: {postStart: {exec: {command: [x]}}}}\n" +
		"  - {name: b, image: i, lifecycle: {preStop: {exec: {command: [sleep, '5']}}}}\n"
	for _, mode := range []struct {
		name string
		opts Options
		// gatePreStop is the gate's own hook, "" for none.
		gatePreStop string
	}{
		{"gate as a native sidecar", Options{}, "/start-drain"},
		{"gate as a regular container", Options{GateAsContainer: true}, ""},
	} {
		t.Run(mode.name, func(t *testing.T) {
			w, cfg := injected(t, m, mode.opts)
			a, b := w.Container("a"), w.Container("b")
			if h := a.Lifecycle.PreStop; h == nil || h.HTTPGet == nil || h.HTTPGet.Path != "/wait-for-drain" || h.HTTPGet.Port != intstr.FromInt32(8022) {
				t.Errorf("a's preStop %+v, want GET :8022/wait-for-drain", h)
			}
			if a.Lifecycle.PostStart == nil {
				t.Error("a's postStart was dropped")
			}
			if h := b.Lifecycle.PreStop; h.Exec == nil {
				t.Errorf("b's own preStop replaced by %+v", h)
			}
			gate := w.Container(contract.GateContainerName)
			switch {
			case mode.gatePreStop == "" && gate.Lifecycle != nil:
				t.Errorf("the gate got a lifecycle %+v", gate.Lifecycle)
			case mode.gatePreStop != "" && (gate.Lifecycle == nil || gate.Lifecycle.PreStop.HTTPGet == nil || gate.Lifecycle.PreStop.HTTPGet.Path != mode.gatePreStop):
				t.Errorf("the gate's preStop %+v, want GET %s (it never waits for its own drain)", gate.Lifecycle, mode.gatePreStop)
			}
			sc := w.Container("sc")
			if sc.Lifecycle != nil {
				t.Errorf("native sidecar got a lifecycle %+v: it stops after the drain is over", sc.Lifecycle)
			}
			if sc.LivenessProbe.TCPSocket == nil {
				t.Errorf("native sidecar liveness %+v, want its own tcp probe kept", sc.LivenessProbe)
			}
			if cfg.WatchedProbes["sc"].Liveness == nil {
				t.Error("the native sidecar's liveness is not watched: nothing depends on the gate's start order any more")
			}
		})
	}
	warns := one(t, m).Warnings()
	if len(warns) != 1 || !strings.HasPrefix(warns[0], "spec.containers[1].lifecycle.preStop: kept") {
		t.Errorf("warnings %q, want one about b's preStop", warns)
	}
}

func TestInjectGateContainer(t *testing.T) {
	for _, mode := range []struct {
		name string
		opts Options
	}{
		{"a native sidecar, first of the init containers", Options{GateImage: "registry.test/gate:v1"}},
		{"the first regular container", Options{GateImage: "registry.test/gate:v1", GateAsContainer: true}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			m := "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  initContainers:\n" +
				"  - {name: setup, image: i, command: [\"true\"]}\n  - {name: sc, image: i, restartPolicy: Always}\n" +
				"  containers:\n  - {name: app, image: img, ports: [{name: http, containerPort: 8080}]}\n"
			w, cfg := injected(t, m, mode.opts)
			spec := w.PodSpec()
			var g corev1.Container
			if mode.opts.GateAsContainer {
				g = spec.Containers[0]
				if g.RestartPolicy != nil || g.StartupProbe != nil {
					t.Errorf("regular gate container: restartPolicy %v, startup %+v; want neither", g.RestartPolicy, g.StartupProbe)
				}
				assertStrings(t, "init containers", names(spec.InitContainers), []string{"setup", "sc"}, false)
			} else {
				g = spec.InitContainers[0]
				assertStrings(t, "init containers", names(spec.InitContainers), []string{"podgate", "setup", "sc"}, false)
				assertStrings(t, "containers", names(spec.Containers), []string{"app"}, false)
				if g.RestartPolicy == nil || *g.RestartPolicy != corev1.ContainerRestartPolicyAlways {
					t.Errorf("gate restartPolicy %v, want Always (a native sidecar)", g.RestartPolicy)
				}
				sp := g.StartupProbe
				// The image's program by its path in the image: both the
				// gate image and podgate's hold it at /podgate.
				if sp == nil || sp.Exec == nil || strings.Join(sp.Exec.Command, " ") != "/podgate gate wait --timeout 9s" ||
					sp.TimeoutSeconds != 10 || sp.PeriodSeconds != 1 {
					t.Errorf("gate startup probe %+v, want exec /podgate gate wait --timeout 9s, timeout 10, period 1", sp)
				}
			}
			if g.Name != contract.GateContainerName || g.Image != "registry.test/gate:v1" {
				t.Fatalf("gate %s (%s), want the gate with the given image", g.Name, g.Image)
			}
			// The image's entrypoint with the subcommand.
			if len(g.Command) != 0 || strings.Join(g.Args, " ") != "gate" {
				t.Errorf("gate runs command %q args %q, want the image's entrypoint with [gate]", g.Command, g.Args)
			}
			var ports []int32
			for _, p := range g.Ports {
				ports = append(ports, p.ContainerPort)
			}
			if len(ports) != 4 || ports[0] != 8012 || ports[1] != 8022 || ports[2] != 9091 || ports[3] != 9090 {
				t.Errorf("gate ports %v, want 8012 8022 9091 9090", ports)
			}
			rp := g.ReadinessProbe
			if rp.HTTPGet.Port != intstr.FromInt32(8022) || rp.HTTPGet.Path != "/readyz/gate" || len(rp.HTTPGet.HTTPHeaders) != 0 ||
				rp.PeriodSeconds != 1 || rp.FailureThreshold != 2 {
				t.Errorf("gate readiness %+v, want GET :8022/readyz/gate every 1s, failure threshold 2", rp)
			}
			if w.Template.Annotations["kubectl.kubernetes.io/default-container"] != "app" {
				t.Errorf("default container annotation %v", w.Template.Annotations)
			}
			if v, _, _ := envValue(w.Container("app"), "PORT"); v != "8080" {
				t.Errorf("serving container PORT %q, want 8080", v)
			}
			if cfg.UserPort != 8080 || cfg.ServingPort != 8012 || cfg.AdminPort != 8022 || cfg.MetricsPort != 9091 || cfg.AutoscalerPort != 9090 {
				t.Errorf("ports in config %+v", cfg)
			}
			if cfg.DrainQuietPeriod != 15*time.Second {
				t.Errorf("drain quiet period %v, want half of the 30 s grace period", cfg.DrainQuietPeriod)
			}
			if cfg.OnlyRouter != "" {
				t.Errorf("only router %q on Kubernetes, want none: other routers may send traffic", cfg.OnlyRouter)
			}
		})
	}
}

func names(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func TestInjectKnativeIdentity(t *testing.T) {
	m := ksvc("      - {image: i}\n", "      containerConcurrency: 4\n      timeoutSeconds: 120\n      responseStartTimeoutSeconds: 30\n      idleTimeoutSeconds: 20\n")
	w, cfg := injected(t, m, Options{})
	if cfg.ResponseStartTimeout != 30*time.Second || cfg.IdleTimeout != 20*time.Second {
		t.Errorf("response start %v idle %v, want 30s and 20s", cfg.ResponseStartTimeout, cfg.IdleTimeout)
	}
	if cfg.Service != "svc" || cfg.Configuration != "svc" || cfg.Revision != "svc-00001" || cfg.Namespace != "default" {
		t.Errorf("identity %q %q %q %q", cfg.Service, cfg.Configuration, cfg.Revision, cfg.Namespace)
	}
	if cfg.ContainerConcurrency != 4 || cfg.RevisionTimeout != 120*time.Second || cfg.DrainQuietPeriod != 30*time.Second {
		t.Errorf("concurrency %d timeout %v drain %v", cfg.ContainerConcurrency, cfg.RevisionTimeout, cfg.DrainQuietPeriod)
	}
	c := w.Container("user-container")
	for name, want := range map[string]string{"PORT": "8080", "K_SERVICE": "svc", "K_CONFIGURATION": "svc", "K_REVISION": "svc-00001"} {
		if v, _, _ := envValue(c, name); v != want {
			t.Errorf("%s = %q, want %q", name, v, want)
		}
	}
	if cfg.Pod != "p" || cfg.PodIP != "127.0.1.9" {
		t.Errorf("downward API values %q %q", cfg.Pod, cfg.PodIP)
	}
}

func TestInjectLocalMode(t *testing.T) {
	m := podWith("readinessProbe: {httpGet: {port: 8080}}\nlivenessProbe: {tcpSocket: {port: 8080}}")
	_, cfg := injected(t, m, Options{Local: true, APIAddr: "127.0.0.1:9999"})
	if h := cfg.ReadinessProbes[0].HTTPGet.Host; h != "" {
		t.Errorf("moved probe host %q, want empty (the gate uses its pod IP)", h)
	}
	if h := cfg.WatchedProbes["app"].Liveness.TCPSocket.Host; h != "" {
		t.Errorf("watched probe host %q, want empty", h)
	}
	if cfg.UpstreamHost != "127.0.1.9" {
		t.Errorf("upstream host %q, want the pod IP", cfg.UpstreamHost)
	}
	if cfg.StatusSource != "http://127.0.0.1:9999" {
		t.Errorf("status source %q, want the node agent's API", cfg.StatusSource)
	}
	if cfg.OnlyRouter != contract.OnlyRouterActivator {
		t.Errorf("only router %q, want the activator: locally the front door is the way in", cfg.OnlyRouter)
	}
}

func TestInjectIsIdempotent(t *testing.T) {
	w := one(t, svcWith("livenessProbe: {tcpSocket: {}}", "readinessProbe: {exec: {command: [x]}}"))
	once, err := Gate(w, Options{})
	if err != nil {
		t.Fatal(err)
	}
	twice, err := Gate(once, Options{Local: true, GateImage: "other"})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := once.YAML()
	b, _ := twice.YAML()
	if string(a) != string(b) {
		t.Errorf("second injection changed the pod:\n%s\n---\n%s", a, b)
	}
	if len(w.PodSpec().Containers) != 2 {
		t.Error("Inject modified its input")
	}
}

func TestDrainQuietPeriod(t *testing.T) {
	for _, tt := range []struct {
		grace int64
		want  time.Duration
	}{{300, 30 * time.Second}, {60, 30 * time.Second}, {30, 15 * time.Second}, {1, 500 * time.Millisecond}, {0, 0}} {
		g := tt.grace
		if got := drainQuietPeriod(&g); got != tt.want {
			t.Errorf("grace %ds: quiet period %v, want %v", tt.grace, got, tt.want)
		}
	}
}

func TestInjectRefusesAUserContainerNamedPodgate(t *testing.T) {
	w := one(t, strings.Replace(podWith(""), "name: app", "name: podgate", 1))
	if _, err := Gate(w, Options{}); err == nil || !strings.Contains(err.Error(), "podgate") {
		t.Fatalf("injecting a pod with a user container named podgate: err %v, want a name clash", err)
	}
}

func TestManifestsInjectsTheWorkloadsAndKeepsTheRestInPlace(t *testing.T) {
	const configMap = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n"
	m, err := workload.Load(strings.NewReader(configMap+"---\n"+podWith("")+"---\n"+configMap), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	items, err := Manifests(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 3 {
		t.Fatalf("%d items, want 3", len(items))
	}
	for i, it := range items {
		w, isWorkload := it.(*workload.Workload)
		if isWorkload != (i == 1) {
			t.Fatalf("item %d is %T: want the pod in the middle, in its place", i, it)
		}
		if isWorkload && !w.IsInjected() {
			t.Error("the pod did not get the gate")
		}
	}

	clash, err := workload.Load(strings.NewReader(strings.Replace(podWith(""), "name: app", "name: podgate", 1)), "clash.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Manifests(clash, Options{}); err == nil || !strings.HasPrefix(err.Error(), "clash.yaml: doc 1: ") {
		t.Errorf("Manifests of a pod that cannot be injected: %v, want the error named by its source", err)
	}
}

// TestInjectNodeStatusSource pins where a gate on a cluster gets its pod
// from: the node status service on its node's address, named through
// PODGATE_HOST_IP (the downward API's status.hostIP), which must come
// before the status source: the kubelet expands $(VAR) of earlier
// variables only. Locally the node agent's API stays the source.
func TestInjectNodeStatusSource(t *testing.T) {
	for _, tc := range []struct {
		name       string
		manifest   string
		opts       Options
		wantSource string // resolved with status.hostIP 10.0.0.9
		wantHostIP bool
	}{
		{"a Pod on a cluster asks the node status service", podWith(""), Options{}, "http://10.0.0.9:9026", true},
		{"a Knative Service on a cluster asks the node status service", svcWith("", ""), Options{}, "http://10.0.0.9:9026", true},
		{"the gate as a regular container asks it too", podWith(""), Options{GateAsContainer: true}, "http://10.0.0.9:9026", true},
		{"podgate run keeps its node agent's API", podWith(""), Options{Local: true, APIAddr: "127.0.0.1:9999"}, "http://127.0.0.1:9999", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, cfg := injected(t, tc.manifest, tc.opts)
			if cfg.StatusSource != tc.wantSource {
				t.Errorf("status source %q, want %q", cfg.StatusSource, tc.wantSource)
			}
			gate := w.Container(contract.GateContainerName)
			hostIP := slices.IndexFunc(gate.Env, func(e corev1.EnvVar) bool { return e.Name == contract.EnvHostIP })
			source := slices.IndexFunc(gate.Env, func(e corev1.EnvVar) bool { return e.Name == contract.EnvStatusSource })
			if !tc.wantHostIP {
				if hostIP >= 0 {
					t.Errorf("%s set locally: %+v", contract.EnvHostIP, gate.Env[hostIP])
				}
				return
			}
			if hostIP < 0 || hostIP > source {
				t.Fatalf("%s at %d, status source at %d: want it right before", contract.EnvHostIP, hostIP, source)
			}
			if f := gate.Env[hostIP].ValueFrom; f == nil || f.FieldRef == nil || f.FieldRef.FieldPath != "status.hostIP" {
				t.Errorf("%s = %+v, want the downward API's status.hostIP", contract.EnvHostIP, gate.Env[hostIP])
			}
			if got := gate.Env[source].Value; got != "http://$(PODGATE_HOST_IP):9026" {
				t.Errorf("status source written %q", got)
			}
		})
	}
}

// TestInjectNamespaceFromPod pins the namespace the gate asks for. The
// webhook writes the request's namespace; `podgate inject` cannot know
// where its output is applied (`kubectl apply -n shop -f -`), so with
// NamespaceFromPod the gate reads its pod's own namespace.
func TestInjectNamespaceFromPod(t *testing.T) {
	for _, tc := range []struct {
		name     string
		manifest string
		opts     Options
		want     string // resolved with metadata.namespace "shop"
	}{
		{"the webhook's literal namespace of the manifest", "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: web}\nspec:\n  containers:\n  - {name: app, image: img, ports: [{containerPort: 8080}]}\n", Options{}, "web"},
		{"the webhook names default for a manifest without namespace", podWith(""), Options{}, "default"},
		{"podgate inject's gate reads its pod's namespace, whatever the manifest says", "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: web}\nspec:\n  containers:\n  - {name: app, image: img, ports: [{containerPort: 8080}]}\n", Options{NamespaceFromPod: true}, "shop"},
		{"podgate inject's gate of a manifest without namespace reads its pod's", podWith(""), Options{NamespaceFromPod: true}, "shop"},
		{"a Knative Service by podgate inject too", svcWith("", ""), Options{NamespaceFromPod: true}, "shop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, cfg := injected(t, tc.manifest, tc.opts)
			if cfg.Namespace != tc.want {
				t.Errorf("SERVING_NAMESPACE resolves to %q, want %q", cfg.Namespace, tc.want)
			}
		})
	}
}
