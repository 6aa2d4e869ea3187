package validation

import (
	"strings"
	"testing"

	"github.com/podgate/podgate/admission/inject"
	"github.com/podgate/podgate/admission/workload"
)

// podWith is a Pod whose single container "app" (image, port 8080) gets
// the extra YAML lines given (indented for the container).
func podWith(container string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: app\n    image: img\n    ports: [{name: http, containerPort: 8080}]\n" + indent(container, 4)
}

// svcWith is a Knative Service: serving container "app" on 8080 with the
// extra lines, plus an optional sidecar "side".
func svcWith(app, side string) string {
	s := "      - name: app\n        image: img\n        ports: [{containerPort: 8080}]\n" + indent(app, 8)
	if side != "" {
		s += "      - name: side\n        image: img\n" + indent(side, 8)
	}
	return ksvc(s)
}

func indent(s string, n int) string {
	if s == "" {
		return ""
	}
	pad := strings.Repeat(" ", n)
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = pad + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}

// validationLines loads and validates, returning "field: body" per error.
func validationLines(t *testing.T, manifest string) []string {
	t.Helper()
	w := one(t, manifest)
	var out []string
	for _, e := range Validate(w) {
		out = append(out, e.Error())
	}
	return out
}

func TestValidationRules(t *testing.T) {
	tests := []struct {
		name     string
		manifest string
		want     []string // prefixes of the errors, in order; nil = valid
	}{
		// Kubernetes probe rules, context-free (package probe) and by kind.
		{"liveness successThreshold must be 1", podWith("livenessProbe: {tcpSocket: {port: 8080}, successThreshold: 2}"),
			[]string{"spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1"}},
		{"startup successThreshold must be 1", podWith("startupProbe: {tcpSocket: {port: 8080}, successThreshold: 2}"),
			[]string{"spec.containers[0].startupProbe.successThreshold: Invalid value: 2: must be 1"}},
		{"readiness successThreshold may exceed 1", podWith("readinessProbe: {tcpSocket: {port: 8080}, successThreshold: 2}"), nil},
		{"readiness has no probe grace period", podWith("readinessProbe: {tcpSocket: {port: 8080}, terminationGracePeriodSeconds: 3}"),
			[]string{"spec.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 3: must not be set for readinessProbes"}},
		{"liveness may have a probe grace period", podWith("livenessProbe: {tcpSocket: {port: 8080}, terminationGracePeriodSeconds: 3}"), nil},
		{"probe grace period 0 is rejected", podWith("startupProbe: {tcpSocket: {port: 8080}, terminationGracePeriodSeconds: 0}"),
			[]string{"spec.containers[0].startupProbe.terminationGracePeriodSeconds: Invalid value: 0: must be greater than 0"}},
		{"one handler only", podWith("readinessProbe: {tcpSocket: {port: 8080}, exec: {command: [x]}}"),
			[]string{"spec.containers[0].readinessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type"}},
		{"port 1-65535", podWith("readinessProbe: {httpGet: {port: 70000}}"),
			[]string{"spec.containers[0].readinessProbe.httpGet.port: Invalid value: 70000: must be between 1 and 65535"}},
		{"named port must exist on the container", podWith("livenessProbe: {httpGet: {port: web}}"),
			[]string{`spec.containers[0].livenessProbe.httpGet.port: Invalid value: "web": no such named port on container "app" (declared: http)`}},
		{"named port that exists is fine", podWith("livenessProbe: {tcpSocket: {port: http}}"), nil},
		{"malformed port name is judged by syntax, once", podWith("livenessProbe: {tcpSocket: {port: Not_A_Name}}"),
			[]string{`spec.containers[0].livenessProbe.tcpSocket.port: Invalid value: "Not_A_Name": must contain only`}},
		{"exec command required", podWith("livenessProbe: {exec: {command: []}}"),
			[]string{"spec.containers[0].livenessProbe.exec.command: Required value"}},
		{"grpc port in range", podWith("readinessProbe: {grpc: {port: 0}}"),
			[]string{"spec.containers[0].readinessProbe.grpc.port: Invalid value: 0: must be between 1 and 65535"}},

		// Knative Service rules.
		{"knative: readiness port out of range is rejected (Knative accepts it)", svcWith("readinessProbe: {httpGet: {port: 70000}}", ""),
			[]string{"spec.template.spec.containers[0].readinessProbe.httpGet.port: Invalid value: 70000"}},
		{"knative: liveness successThreshold 2 is rejected at admission", svcWith("livenessProbe: {tcpSocket: {}, successThreshold: 2}", ""),
			[]string{"spec.template.spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1"}},
		{"knative: aggressive readiness forbids timeout and failureThreshold", svcWith("readinessProbe: {tcpSocket: {}, periodSeconds: 0, timeoutSeconds: 1, failureThreshold: 1}", ""),
			[]string{"spec.template.spec.containers[0].readinessProbe.timeoutSeconds: Forbidden", "spec.template.spec.containers[0].readinessProbe.failureThreshold: Forbidden"}},
		{"knative: aggressive readiness alone is fine", svcWith("readinessProbe: {tcpSocket: {}, periodSeconds: 0}", ""), nil},
		{"knative: sidecar exec readiness needs no port", svcWith("", "readinessProbe: {exec: {command: [cat, /tmp/x]}}"), nil},
		{"knative: sidecar exec liveness and startup need no port", svcWith("", "livenessProbe: {exec: {command: [x]}}\nstartupProbe: {exec: {command: [x]}}"), nil},
		{"knative: sidecar network probe needs a port", svcWith("", "readinessProbe: {tcpSocket: {}}"),
			[]string{`spec.template.spec.containers[1].readinessProbe.tcpSocket.port: Required value: container "side" is not the serving container`}},
		{"knative: sidecar named port is resolved at admission", svcWith("", "readinessProbe: {httpGet: {port: admin}}"),
			[]string{`spec.template.spec.containers[1].readinessProbe.httpGet.port: Invalid value: "admin": no such named port`}},
		{"knative: serving startup probe without port is filled, not rejected", svcWith("startupProbe: {httpGet: {path: /s}}", ""), nil},
		{"knative: liveness probe grace period is accepted (Knative's schema lacks it)", svcWith("livenessProbe: {tcpSocket: {}, terminationGracePeriodSeconds: 5}", ""), nil},
		{"knative: one port across all containers", svcWith("", "ports: [{containerPort: 9000}]"),
			[]string{"spec.template.spec.containers[1].ports[0]: Invalid value: 9000: more than one container port is set"}},
		{"knative: several containers need a serving port", ksvc("      - {name: a, image: i}\n      - {name: b, image: i}\n"),
			[]string{"spec.template.spec.containers: Required value: with several containers, exactly one must declare a port"}},
		{"knative: single container may declare no port", ksvc("      - {image: i}\n"), nil},
		{"knative: port names h2c and http1 only", ksvc("      - {image: i, ports: [{name: grpc, containerPort: 8080}]}\n"),
			[]string{`spec.template.spec.containers[0].ports[0].name: Unsupported value: "grpc"`}},
		{"knative: Knative's queue-proxy ports are reserved", ksvc("      - {image: i, ports: [{containerPort: 8013}]}\n"),
			[]string{"spec.template.spec.containers[0].ports[0].containerPort: Invalid value: 8013: reserved by Knative's queue-proxy"}},
		{"knative: PORT is reserved on the serving container only", svcWith("env: [{name: PORT, value: '1'}]", "env: [{name: PORT, value: '2'}]"),
			[]string{`spec.template.spec.containers[0].env[0].name: Invalid value: "PORT": reserved`}},
		{"knative: timeout and concurrency limits", ksvc("      - {image: i}\n", "      timeoutSeconds: -5\n      containerConcurrency: 1001\n"),
			[]string{"spec.template.spec.timeoutSeconds: Invalid value: -5", "spec.template.spec.containerConcurrency: Invalid value: 1001"}},
		{"knative: native sidecars are accepted with probes", ksvc("      - {image: i}\n",
			"      initContainers:\n      - name: proxy\n        image: i\n        restartPolicy: Always\n        readinessProbe: {tcpSocket: {port: 9}}\n        startupProbe: {exec: {command: [x]}}\n"), nil},
		{"knative: init container errors are reported under initContainers", ksvc("      - {image: i}\n",
			"      initContainers:\n      - {name: setup, image: i, livenessProbe: {exec: {command: [x]}}}\n"),
			[]string{"spec.template.spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always"}},

		// Pod rules.
		{"gate ports are reserved in every pod", strings.Replace(podWith(""), "containerPort: 8080", "containerPort: 8012", 1),
			[]string{"spec.containers[0].ports[0].containerPort: Invalid value: 8012: reserved: the gate listens on 8012"}},
		{"the autoscaler statistics port is the gate's too", strings.Replace(podWith(""), "containerPort: 8080", "containerPort: 9090", 1),
			[]string{"spec.containers[0].ports[0].containerPort: Invalid value: 9090: reserved: the gate listens on 9090 (autoscaler statistics) in every pod"}},
		{"a UDP port on a gate port number is fine", strings.Replace(podWith(""), "containerPort: 8080}", "containerPort: 8022, protocol: UDP}", 1), nil},
		{"container names are unique across init and regular containers", strings.Replace(podWith(""), "spec:\n", "spec:\n  initContainers: [{name: app, image: i}]\n", 1),
			[]string{`spec.containers[0].name: Duplicate value: "app"`}},
		{"the gate's name is reserved", strings.Replace(podWith(""), "name: app", "name: podgate", 1),
			[]string{`spec.containers[0].name: Invalid value: "podgate": reserved for the gate container`}},
		{"PORT on the serving container must be the serving port", podWith("env: [{name: PORT, value: '9'}]"),
			[]string{`spec.containers[0].env[0].value: Invalid value: "9": podgate sets PORT to the serving port 8080`}},
		{"PORT equal to the serving port is fine", podWith("env: [{name: PORT, value: '8080'}]"), nil},
		{"restartPolicy values", strings.Replace(podWith(""), "spec:\n", "spec:\n  restartPolicy: Sometimes\n", 1),
			[]string{`spec.restartPolicy: Unsupported value: "Sometimes"`}},
		{"pod grace period is not negative", strings.Replace(podWith(""), "spec:\n", "spec:\n  terminationGracePeriodSeconds: -1\n", 1),
			[]string{"spec.terminationGracePeriodSeconds: Invalid value: -1"}},
		// podgate.dev/exclude-containers names containers the gate aggregates.
		{"excluding a sidecar and a native sidecar is fine", excluding("side, sc"), nil},
		{"excluding an unknown container is refused", excluding("nope"),
			[]string{`metadata.annotations[podgate.dev/exclude-containers]: Invalid value: "nope": no container "nope" among the containers and native sidecars the gate aggregates (app, side, sc)`}},
		{"excluding the serving container is refused", excluding("app"),
			[]string{`metadata.annotations[podgate.dev/exclude-containers]: Invalid value: "app": "app" is the serving container`}},
		{"excluding a plain init container is refused", excluding("setup"),
			[]string{`metadata.annotations[podgate.dev/exclude-containers]: Invalid value: "setup": no container "setup"`}},
		{"empty names and duplicates are refused", excluding("side,,side"),
			[]string{`metadata.annotations[podgate.dev/exclude-containers]: Invalid value: "side,,side": entry 2 is empty`,
				`metadata.annotations[podgate.dev/exclude-containers]: Invalid value: "side,,side": "side" is listed twice`}},
		{"a Deployment's annotation is the template's", strings.Replace(deploymentWith(""), "metadata: {labels: {app: d}}", "metadata: {labels: {app: d}, annotations: {podgate.dev/exclude-containers: nope}}", 1),
			[]string{`spec.template.metadata.annotations[podgate.dev/exclude-containers]: Invalid value: "nope": no container "nope"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertStrings(t, "errors", validationLines(t, tt.manifest), tt.want, true)
		})
	}
}

func TestInjectedWorkloadStillValidates(t *testing.T) {
	for _, m := range []string{
		svcWith("readinessProbe: {httpGet: {path: /r}}\nlivenessProbe: {tcpSocket: {}}", "readinessProbe: {exec: {command: [x]}}"),
		podWith("readinessProbe: {httpGet: {port: http}}"),
		ksvc("      - {image: i}\n"),
	} {
		w := one(t, m)
		if errs := Validate(w); len(errs) > 0 {
			t.Fatalf("original invalid: %v", errs)
		}
		iw, err := inject.Gate(w, inject.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if errs := Validate(iw); len(errs) > 0 {
			t.Errorf("%s: injected workload reported %v", w.ID(), errs)
		}
	}
}

// one loads a manifest holding exactly one workload, without problems.
func one(t *testing.T, manifest string) *workload.Workload {
	t.Helper()
	m, err := workload.Load(strings.NewReader(manifest), "m.yaml")
	if err != nil {
		t.Fatalf("load problems: %v", err)
	}
	if len(m.Workloads) != 1 {
		t.Fatalf("%d workloads, want 1", len(m.Workloads))
	}
	return m.Workloads[0]
}

func ksvc(containers string, extra ...string) string {
	spec := ""
	meta := ""
	if len(extra) > 0 {
		spec = extra[0]
	}
	if len(extra) > 1 {
		meta = extra[1]
	}
	return "apiVersion: serving.knative.dev/v1\nkind: Service\nmetadata: {name: svc}\nspec:\n  template:\n" + meta + "    spec:\n" + spec + "      containers:\n" + containers
}

// assertStrings compares lists; with prefix, want[i] need only start got[i].
func assertStrings(t *testing.T, what string, got, want []string, prefix bool) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s = %q, want %q", what, got, want)
		return
	}
	for i := range want {
		if got[i] != want[i] && !(prefix && strings.HasPrefix(got[i], want[i])) {
			t.Errorf("%s[%d] = %q, want %q", what, i, got[i], want[i])
		}
	}
}

// excluding is a Pod with a serving container app, a sidecar side, a
// native sidecar sc and a plain init container setup, whose
// podgate.dev/exclude-containers annotation is value.
func excluding(value string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: {podgate.dev/exclude-containers: '" + value + "'}}\nspec:\n" +
		"  initContainers:\n  - {name: setup, image: i}\n  - {name: sc, image: i, restartPolicy: Always}\n" +
		"  containers:\n  - {name: app, image: i, ports: [{containerPort: 8080}]}\n  - {name: side, image: i}\n"
}

// deploymentWith is a Deployment d whose pod has a serving container app
// with the extra lines.
func deploymentWith(app string) string {
	return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  selector: {matchLabels: {app: d}}\n  template:\n" +
		"    metadata: {labels: {app: d}}\n    spec:\n      containers:\n      - name: app\n        image: i\n        ports: [{containerPort: 8080}]\n" + indent(app, 8)
}
