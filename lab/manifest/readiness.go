package manifest

import (
	"encoding/json"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The kubelet's defaults for a probe that leaves them unset.
const (
	defaultPeriodSeconds    = 10
	defaultFailureThreshold = 3
)

// UnreadyAfter is how long the readiness probe of the container that
// serves port (a containerPort of it, the test app's --port, or its
// readiness probe's HTTP or TCP port) takes at most to call the container unready once its check
// starts failing: periodSeconds × failureThreshold, with the kubelet's
// defaults for unset fields. exec says which readiness probe a toggle
// fails: an exec one (the test app's exec file) or an HTTP one (its
// /readyz). ok is false when no container of the manifest has port
// with such a readiness probe.
func (m *Manifest) UnreadyAfter(port int, exec bool) (d time.Duration, ok bool) {
	for _, doc := range m.docs {
		raw, err := podSpec(doc)
		if err != nil {
			continue
		}
		data, err := json.Marshal(raw)
		if err != nil {
			continue
		}
		var spec corev1.PodSpec
		if json.Unmarshal(data, &spec) != nil {
			continue
		}
		for _, c := range append(spec.InitContainers, spec.Containers...) {
			if c.ReadinessProbe == nil || !servesPort(c, port) || (c.ReadinessProbe.Exec != nil) != exec {
				continue
			}
			p := c.ReadinessProbe
			period, threshold := p.PeriodSeconds, p.FailureThreshold
			if period == 0 {
				period = defaultPeriodSeconds
			}
			if threshold == 0 {
				threshold = defaultFailureThreshold
			}
			return time.Duration(period*threshold) * time.Second, true
		}
	}
	return 0, false
}

func servesPort(c corev1.Container, port int) bool {
	for _, p := range c.Ports {
		if int(p.ContainerPort) == port {
			return true
		}
	}
	// The test app's own flag: a sidecar that declares no port.
	for i, a := range c.Args {
		if (a == "--port" && i+1 < len(c.Args) && c.Args[i+1] == strconv.Itoa(port)) || a == "--port="+strconv.Itoa(port) {
			return true
		}
	}
	h := c.ReadinessProbe.ProbeHandler
	switch {
	case h.HTTPGet != nil:
		return h.HTTPGet.Port.IntValue() == port
	case h.TCPSocket != nil:
		return h.TCPSocket.Port.IntValue() == port
	}
	return false
}
