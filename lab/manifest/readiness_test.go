package manifest

import (
	"testing"
	"time"
)

func TestUnreadyAfterIsTheProbesPeriodTimesItsThreshold(t *testing.T) {
	m, err := Parse([]byte(`
apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: s}
spec:
  template:
    spec:
      containers:
        - name: app
          ports: [{containerPort: 8080}]
          readinessProbe: {httpGet: {path: /readyz}, periodSeconds: 1}
        - name: http-sidecar
          readinessProbe: {httpGet: {path: /readyz, port: 8090}, periodSeconds: 2, failureThreshold: 1}
        - name: exec-sidecar
          args: ["--port", "8091"]
          readinessProbe: {exec: {command: [cat, /tmp/ready]}, periodSeconds: 1, failureThreshold: 1}
        - name: defaults
          ports: [{containerPort: 8092}]
          readinessProbe: {tcpSocket: {port: 8092}}
        - name: unprobed
          ports: [{containerPort: 8093}]
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		port int
		exec bool
		want time.Duration
		ok   bool
	}{
		{"a containerPort, the threshold unset: 3 periods", 8080, false, 3 * time.Second, true},
		{"a probe's own port", 8090, false, 2 * time.Second, true},
		{"an exec probe's container by the test app's --port", 8091, true, time.Second, true},
		{"an exec toggle of a container whose readiness is HTTP fails no readiness", 8080, true, 0, false},
		{"an HTTP toggle of a container whose readiness is exec fails no readiness", 8091, false, 0, false},
		{"the kubelet's defaults: 10 s × 3", 8092, false, 30 * time.Second, true},
		{"a container without a readiness probe", 8093, false, 0, false},
		{"no container", 9999, false, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := m.UnreadyAfter(tc.port, tc.exec)
			if got != tc.want || ok != tc.ok {
				t.Errorf("UnreadyAfter(%d, %t) = %s, %t; want %s, %t", tc.port, tc.exec, got, ok, tc.want, tc.ok)
			}
		})
	}
}
