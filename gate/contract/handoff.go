package contract

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// The hand-off: what the gate does with a request that arrives while its
// pod is not ready, once the pod is out of the endpoints (docs/gate.md,
// "While the pod is not ready").

const (
	// EnvHandoffURL is the http:// URL of Knative's activator (e.g.
	// http://activator-service.knative-serving.svc.cluster.local:80). When
	// set, a request held because the pod's containers are not ready is
	// forwarded there once the pod's Ready condition is False (or the pod
	// is being deleted), with HandoffHeader and Knative's routing headers
	// (SERVING_NAMESPACE, SERVING_REVISION), so the activator routes it
	// to a ready pod or holds it until one is. Unset: held requests wait
	// for this pod.
	EnvHandoffURL = "PODGATE_HANDOFF_URL"

	// HandoffHeader marks a request the gate handed to the activator:
	// "<pod>;n=<count>", the pod that handed it last and how often it has
	// been handed in all. A gate that gets a marked request while its pod
	// is not ready holds it and hands it again only after a backoff, and
	// never more than MaxHandoffs times in all.
	HandoffHeader = "Podgate-Handoff"

	// MaxHandoffs bounds how often one request is handed to the
	// activator, across every pod it reaches: after that it is held
	// until the pod it is in is ready, or its timeout.
	MaxHandoffs = 5

	// Knative's activator routes a request by these headers (its
	// context handler reads them; the ingress sets them).
	KnativeNamespaceHeader = "Knative-Serving-Namespace"
	KnativeRevisionHeader  = "Knative-Serving-Revision"
)

// FormatHandoff is HandoffHeader's value for a request handed by pod for
// the n-th time.
func FormatHandoff(pod string, n int) string {
	return pod + ";n=" + strconv.Itoa(n)
}

// ParseHandoff reads HandoffHeader's value. A value it cannot read counts
// as handed MaxHandoffs times (ok false): a request whose count is lost
// must not loop.
func ParseHandoff(v string) (pod string, n int, ok bool) {
	i := strings.LastIndex(v, ";n=")
	if i < 0 {
		return "", MaxHandoffs, false
	}
	n, err := strconv.Atoi(v[i+len(";n="):])
	if err != nil || n < 1 || strings.HasPrefix(v[i+len(";n="):], "+") {
		return "", MaxHandoffs, false
	}
	return v[:i], min(n, MaxHandoffs), true
}

// parseHandoffURL checks EnvHandoffURL's value: an absolute http:// URL
// with a host and nothing after the authority but an optional "/".
func parseHandoffURL(v string) error {
	u, err := url.Parse(v)
	switch {
	case err != nil:
		return err
	case u.Scheme != "http":
		return fmt.Errorf("scheme %q is not http", u.Scheme)
	case u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("has no host")
	case u.User != nil:
		return fmt.Errorf("carries user information")
	case u.Path != "" && u.Path != "/", u.RawQuery != "", u.Fragment != "", u.Opaque != "":
		return fmt.Errorf("has a path, query or fragment (the request's own are kept)")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("port %q is not 1-65535", p)
		}
	}
	return nil
}
