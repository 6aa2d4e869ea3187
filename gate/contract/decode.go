package contract

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Decode reads the configuration from the environment (getenv is os.Getenv
// in the gate). Unset variables take their defaults. Every malformed value
// is reported, each as "NAME: problem", joined into one error; the Config
// returned alongside holds whatever could be read.
//
// Decode cannot tell an unset variable from an empty one, so it checks
// values only. `podgate gate` reads its own environment with DecodeEnv,
// which also applies queue-proxy's rules about presence.
func Decode(getenv func(string) string) (Config, error) {
	return decode(decoder{lookup: func(name string) (string, bool) {
		v := getenv(name)
		return v, v != ""
	}})
}

// DecodeEnv is Decode with queue-proxy's rules about presence (lookup is
// os.LookupEnv in the gate): every variable of Required must be set, and
// a number, port or boolean of queue-proxy's that is set to the empty
// string is malformed, as queue-proxy's parser fails on it (an empty
// PODGATE_* variable still means unset).
func DecodeEnv(lookup func(string) (string, bool)) (Config, error) {
	d := decoder{lookup: lookup, strict: true}
	for _, name := range Required {
		if _, ok := lookup(name); !ok {
			d.fail(name, "is required (queue-proxy's environment) but not set")
		}
	}
	return decode(d)
}

func decode(d decoder) (Config, error) {
	c := Defaults()
	getenv := d.getenv

	d.port(EnvQueueServingPort, &c.ServingPort, true)
	d.port(EnvAdminPort, &c.AdminPort, true)
	d.port(EnvMetricsPort, &c.MetricsPort, true)
	d.port(EnvAutoscalerPort, &c.AutoscalerPort, true)
	d.port(EnvUserPort, &c.UserPort, false)
	d.tls(&c)
	d.host(EnvUpstreamHost, &c.UpstreamHost)
	d.nonNegative(EnvContainerConcurrency, &c.ContainerConcurrency)
	d.seconds(EnvRevisionTimeoutSeconds, &c.RevisionTimeout)
	d.seconds(EnvRevisionResponseStartTimeoutSeconds, &c.ResponseStartTimeout)
	d.seconds(EnvRevisionIdleTimeoutSeconds, &c.IdleTimeout)

	c.Namespace = getenv(EnvServingNamespace)
	c.Service = getenv(EnvServingService)
	c.Configuration = getenv(EnvServingConfiguration)
	c.Revision = getenv(EnvServingRevision)
	c.Pod = getenv(EnvServingPod)
	c.PodIP = getenv(EnvServingPodIP)
	if c.PodIP != "" && net.ParseIP(c.PodIP) == nil {
		d.fail(EnvServingPodIP, "%q is not an IP address", c.PodIP)
	}

	d.boolean(EnvMultiContainerProbes, &c.MultiContainerProbes)
	d.boolean(EnvHTTP2AutoDetection, &c.HTTP2AutoDetection)
	c.ReadinessProbes = d.readinessProbes(c.MultiContainerProbes)
	c.ReadinessContainers = d.names(EnvReadinessContainers)
	if c.ReadinessContainers != nil && len(c.ReadinessContainers) != len(c.ReadinessProbes) {
		d.fail(EnvReadinessContainers, "names %d containers but %s holds %d probes",
			len(c.ReadinessContainers), EnvServingReadinessProbe, len(c.ReadinessProbes))
	}
	c.DelegatedReadiness = d.names(EnvDelegatedReadiness)
	c.Containers = d.names(EnvContainers)
	c.WatchedProbes, c.ProbesRouted = d.watchedProbes()
	c.ExcludedContainers = d.names(EnvExcludedContainers)

	if v := getenv(EnvDrainQuietPeriod); v != "" {
		p, err := time.ParseDuration(v)
		switch {
		case err != nil:
			d.fail(EnvDrainQuietPeriod, "%q is not a duration (like 30s): %v", v, err)
		case p < 0:
			d.fail(EnvDrainQuietPeriod, "%q is negative", v)
		default:
			c.DrainQuietPeriod = p
		}
	}
	d.statusSource(&c.StatusSource)
	switch v := getenv(EnvOnlyRouter); v {
	case "", OnlyRouterActivator:
		c.OnlyRouter = v
	default:
		d.fail(EnvOnlyRouter, "%q is not %q (the only router podgate knows to trust)", v, OnlyRouterActivator)
	}
	if v := getenv(EnvAdminToken); v != "" {
		if validAdminToken(v) {
			c.AdminToken = v
		} else {
			d.fail(EnvAdminToken, "is not a header value: 1 to 256 visible ASCII characters without spaces")
		}
	}
	if v := getenv(EnvHandoffURL); v != "" {
		if err := parseHandoffURL(v); err != nil {
			d.fail(EnvHandoffURL, "%q is not the http:// URL of Knative's activator: %v", v, err)
		} else {
			c.HandoffURL = v
		}
	}
	if c.HandoffURL != "" && c.StatusSource == StatusSourceNone {
		d.fail(EnvHandoffURL, "is set, but %s is %q: only a status source tells the gate that its pod is out of the endpoints",
			EnvStatusSource, StatusSourceNone)
	}
	if len(c.DelegatedReadiness) > 0 && c.StatusSource == StatusSourceNone {
		d.fail(EnvStatusSource, "is %q, but %s lists containers whose readiness only a status source knows",
			StatusSourceNone, EnvDelegatedReadiness)
	}
	return c, errors.Join(d.errs...)
}

type decoder struct {
	lookup func(string) (string, bool)
	// strict: a queue-proxy number, port or boolean that is set to the
	// empty string is malformed rather than unset.
	strict bool
	errs   []error
}

func (d *decoder) getenv(name string) string {
	v, _ := d.lookup(name)
	return v
}

// value reads a queue-proxy variable of a parsed type: ok is false when
// it is to be left at its default (unset, or empty outside strict mode).
func (d *decoder) value(name string) (string, bool) {
	v, set := d.lookup(name)
	if v == "" && !(d.strict && set && isKnative(name)) {
		return "", false
	}
	return v, true
}

// isKnative tells queue-proxy's variables from podgate's additions.
func isKnative(name string) bool { return !strings.HasPrefix(name, "PODGATE_") }

func (d *decoder) fail(name, format string, args ...any) {
	d.errs = append(d.errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
}

// port reads a TCP port; listen ports may be 0 (pick a free one).
func (d *decoder) port(name string, dst *int, zeroOK bool) {
	v, ok := d.value(name)
	if !ok {
		return
	}
	n, err := strconv.Atoi(v)
	lo := 1
	if zeroOK {
		lo = 0
	}
	if err != nil || n < lo || n > 65535 {
		d.fail(name, "%q is not a port number (%d-65535)", v, lo)
		return
	}
	*dst = n
}

func (d *decoder) nonNegative(name string, dst *int) bool {
	v, ok := d.value(name)
	if !ok {
		return false
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		d.fail(name, "%q is not a whole number >= 0", v)
		return false
	}
	*dst = n
	return true
}

// seconds reads a whole number of seconds >= 0.
func (d *decoder) seconds(name string, dst *time.Duration) {
	var n int
	if d.nonNegative(name, &n) {
		*dst = time.Duration(n) * time.Second
	}
}

func (d *decoder) boolean(name string, dst *bool) {
	v, ok := d.value(name)
	if !ok {
		return
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		d.fail(name, "%q is not true or false", v)
		return
	}
	*dst = b
}

func (d *decoder) host(name string, dst *string) {
	v := d.getenv(name)
	if v == "" {
		return
	}
	if net.ParseIP(v) == nil && !isHostname(v) {
		d.fail(name, "%q is not an IP address or host name", v)
		return
	}
	*dst = v
}

// isHostname accepts DNS names made of letters, digits, '-' and '.'.
func isHostname(s string) bool {
	if len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return false
			}
		}
	}
	return true
}

// names reads a comma-separated list of container names; nil when unset.
func (d *decoder) names(name string) []string {
	v := d.getenv(name)
	if v == "" {
		return nil
	}
	parts := strings.Split(v, ",")
	seen := make(map[string]bool, len(parts))
	out := make([]string, 0, len(parts))
	for i, p := range parts {
		p = strings.TrimSpace(p)
		switch {
		case p == "":
			d.fail(name, "entry %d of %q is empty", i+1, v)
			continue
		case seen[p]:
			d.fail(name, "%q is listed twice", p)
			continue
		}
		seen[p] = true
		out = append(out, p)
	}
	return out
}

func (d *decoder) readinessProbes(multi bool) []*corev1.Probe {
	v := strings.TrimSpace(d.getenv(EnvServingReadinessProbe))
	if v == "" {
		return nil
	}
	name := EnvServingReadinessProbe
	var probes []*corev1.Probe
	// The flag decides the form, as for queue-proxy, which fails to start
	// on the other one.
	isArray := strings.HasPrefix(v, "[")
	switch {
	case isArray && !multi:
		d.fail(name, "is a JSON array, which needs %s=true", EnvMultiContainerProbes)
		return nil
	case !isArray && multi:
		d.fail(name, "is not a JSON array, which %s=true needs (one probe per container, serving container first)", EnvMultiContainerProbes)
		return nil
	case isArray:
		if err := strictJSON(v, &probes, field.NewPath(name)); err != nil {
			d.fail(name, "not a JSON array of probes: %v", err)
			return nil
		}
	default:
		p := &corev1.Probe{}
		if err := strictJSON(v, p, nil); err != nil {
			d.fail(name, "not a JSON probe: %v", err)
			return nil
		}
		probes = []*corev1.Probe{p}
	}
	if len(probes) == 0 {
		return nil // [] means no probes, like an empty variable
	}
	for i, p := range probes {
		where := "the probe"
		if multi {
			where = fmt.Sprintf("probe %d", i)
		}
		if err := runnable(p); err != nil {
			d.fail(name, "%s: %v", where, err)
		}
	}
	return probes
}

// watchedProbes reads PODGATE_WATCHED_PROBES, or an older injection's
// PODGATE_ROUTED_PROBES (routed reports which). Both set is an error: one
// injection writes one of them.
func (d *decoder) watchedProbes() (m map[string]ContainerProbes, routed bool) {
	name := EnvWatchedProbes
	v := d.getenv(EnvWatchedProbes)
	if old := d.getenv(EnvRoutedProbes); old != "" {
		if v != "" {
			d.fail(EnvRoutedProbes, "is set together with %s: one injection writes only one of them", EnvWatchedProbes)
			return nil, false
		}
		name, v, routed = EnvRoutedProbes, old, true
	}
	if v == "" {
		return nil, false
	}
	if err := strictJSON(v, &m, nil); err != nil {
		d.fail(name, "not a JSON object of container → {liveness, startup}: %v", err)
		return nil, false
	}
	if len(m) == 0 {
		return nil, false
	}
	for c, rp := range m {
		if c == "" {
			d.fail(name, "a container name is empty")
		}
		for _, kind := range []ProbeKind{Liveness, Startup} {
			if p := rp.Probe(kind); p != nil {
				if err := runnable(p); err != nil {
					d.fail(name, "%s %s probe: %v", c, kind, err)
				}
			}
		}
	}
	return m, routed
}

// tls reads the TLS port and settings. queue-proxy parses its settings only
// when it finds the certificate at start; the gate checks them always, so
// a malformed value does not wait for the certificate to surface.
func (d *decoder) tls(c *Config) {
	d.port(EnvQueueServingTLSPort, &c.TLSPort, true)
	s, err := ParseTLSSettings(d.getenv(EnvTLSMinVersion), d.getenv(EnvTLSMaxVersion),
		d.getenv(EnvTLSCipherSuites), d.getenv(EnvTLSCurvePreferences))
	if err != nil {
		d.errs = append(d.errs, err)
	}
	c.TLS = s
	if v := d.getenv(EnvTLSCertDir); v != "" {
		c.TLSCertDir = v
	}
}

func (d *decoder) statusSource(dst *string) {
	v := d.getenv(EnvStatusSource)
	switch v {
	case "":
		return
	case StatusSourceKubernetes, StatusSourceNone:
		*dst = v
		return
	}
	u, err := url.Parse(v)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		d.fail(EnvStatusSource, "%q is neither %q, %q nor an http:// URL of the node agent's API",
			v, StatusSourceKubernetes, StatusSourceNone)
		return
	}
	*dst = v
}
