package contract

import (
	"fmt"
	"strings"
)

// ProbeKind is a probe the kubelet reaches through the gate.
type ProbeKind string

const (
	Liveness ProbeKind = "liveness"
	Startup  ProbeKind = "startup"
)

// ProbePath is the admin path the kubelet calls to run container's probe
// of the given kind through the gate.
func ProbePath(container string, kind ProbeKind) string {
	return ProbePathPrefix + container + "/" + string(kind)
}

// ParseProbePath splits /probe/<container>/<kind>. Container names are DNS
// labels, so they never contain a slash.
func ParseProbePath(path string) (container string, kind ProbeKind, err error) {
	rest, ok := strings.CutPrefix(path, ProbePathPrefix)
	if !ok {
		return "", "", fmt.Errorf("probe path %q does not start with %s", path, ProbePathPrefix)
	}
	container, k, ok := strings.Cut(rest, "/")
	if !ok || container == "" {
		return "", "", fmt.Errorf("probe path %q: want %s<container>/<liveness|startup>", path, ProbePathPrefix)
	}
	switch ProbeKind(k) {
	case Liveness, Startup:
		return container, ProbeKind(k), nil
	}
	return "", "", fmt.Errorf("probe path %q: kind %q is neither %q nor %q", path, k, Liveness, Startup)
}
