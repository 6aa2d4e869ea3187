package contract

import (
	"encoding/json"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Encode writes the configuration as container environment, in a fixed
// order. Knative's variables are always written, as queue-proxy expects
// them; podgate's only when they differ from what an unset variable means,
// except the drain quiet period and status source, which are written so a
// reader of the pod spec sees them. Pod and PodIP are left to
// DownwardAPIEnv.
func (c Config) Encode() []corev1.EnvVar {
	d := Defaults()
	// More than one probe only fits the list form.
	multi := c.MultiContainerProbes || len(c.ReadinessProbes) > 1
	env := []corev1.EnvVar{
		{Name: EnvServingNamespace, Value: c.Namespace},
		{Name: EnvServingService, Value: c.Service},
		{Name: EnvServingConfiguration, Value: c.Configuration},
		{Name: EnvServingRevision, Value: c.Revision},
		{Name: EnvQueueServingPort, Value: strconv.Itoa(c.ServingPort)},
		{Name: EnvUserPort, Value: strconv.Itoa(c.UserPort)},
		{Name: EnvContainerConcurrency, Value: strconv.Itoa(c.ContainerConcurrency)},
		{Name: EnvRevisionTimeoutSeconds, Value: strconv.FormatInt(int64(c.RevisionTimeout.Seconds()), 10)},
		{Name: EnvMultiContainerProbes, Value: strconv.FormatBool(multi)},
		{Name: EnvServingReadinessProbe, Value: encodeProbes(c.ReadinessProbes, multi)},
	}
	add := func(name, value string) { env = append(env, corev1.EnvVar{Name: name, Value: value}) }
	// Optional for queue-proxy too, and off unless set: written only when
	// on, so pod specs that do not use them stay as they were. The TLS
	// port too: queue-proxy requires it, the gate defaults it to 8112.
	if c.HTTP2AutoDetection {
		add(EnvHTTP2AutoDetection, "true")
	}
	minV, maxV, suites, curves := c.TLS.Env()
	for _, v := range [][2]string{{EnvTLSMinVersion, minV}, {EnvTLSMaxVersion, maxV}, {EnvTLSCipherSuites, suites}, {EnvTLSCurvePreferences, curves}} {
		if v[1] != "" {
			add(v[0], v[1])
		}
	}
	if c.TLSPort != d.TLSPort {
		add(EnvQueueServingTLSPort, strconv.Itoa(c.TLSPort))
	}
	if c.TLSCertDir != d.TLSCertDir && c.TLSCertDir != "" {
		add(EnvTLSCertDir, c.TLSCertDir)
	}
	if c.ResponseStartTimeout > 0 {
		add(EnvRevisionResponseStartTimeoutSeconds, strconv.FormatInt(int64(c.ResponseStartTimeout.Seconds()), 10))
	}
	if c.IdleTimeout > 0 {
		add(EnvRevisionIdleTimeoutSeconds, strconv.FormatInt(int64(c.IdleTimeout.Seconds()), 10))
	}
	if len(c.ReadinessContainers) > 0 {
		add(EnvReadinessContainers, strings.Join(c.ReadinessContainers, ","))
	}
	if len(c.DelegatedReadiness) > 0 {
		add(EnvDelegatedReadiness, strings.Join(c.DelegatedReadiness, ","))
	}
	if len(c.Containers) > 0 {
		add(EnvContainers, strings.Join(c.Containers, ","))
	}
	env = c.encodeWatched(env)
	add(EnvDrainQuietPeriod, c.DrainQuietPeriod.String())
	add(EnvStatusSource, c.StatusSource)
	if c.OnlyRouter != "" {
		add(EnvOnlyRouter, c.OnlyRouter)
	}
	if c.AdminToken != "" {
		add(EnvAdminToken, c.AdminToken)
	}
	if c.HandoffURL != "" {
		add(EnvHandoffURL, c.HandoffURL)
	}
	if c.UpstreamHost != d.UpstreamHost && c.UpstreamHost != "" {
		add(EnvUpstreamHost, c.UpstreamHost)
	}
	if c.AdminPort != d.AdminPort {
		add(EnvAdminPort, strconv.Itoa(c.AdminPort))
	}
	if c.MetricsPort != d.MetricsPort {
		add(EnvMetricsPort, strconv.Itoa(c.MetricsPort))
	}
	if c.AutoscalerPort != d.AutoscalerPort {
		add(EnvAutoscalerPort, strconv.Itoa(c.AutoscalerPort))
	}
	return env
}

// encodeWatched appends PODGATE_WATCHED_PROBES (or, as it was read, an
// older injection's PODGATE_ROUTED_PROBES) and PODGATE_EXCLUDED_CONTAINERS.
func (c Config) encodeWatched(env []corev1.EnvVar) []corev1.EnvVar {
	if len(c.WatchedProbes) > 0 {
		// Map keys are sorted by encoding/json: the output is stable.
		b, _ := json.Marshal(c.WatchedProbes)
		name := EnvWatchedProbes
		if c.ProbesRouted {
			name = EnvRoutedProbes
		}
		env = append(env, corev1.EnvVar{Name: name, Value: string(b)})
	}
	if len(c.ExcludedContainers) > 0 {
		env = append(env, corev1.EnvVar{Name: EnvExcludedContainers, Value: strings.Join(c.ExcludedContainers, ",")})
	}
	return env
}

// encodeProbes writes SERVING_READINESS_PROBE: one object, or an array in
// multi-container mode. No probes is the empty string ("always ready").
func encodeProbes(probes []*corev1.Probe, multi bool) string {
	if len(probes) == 0 {
		return ""
	}
	var b []byte
	if multi {
		b, _ = json.Marshal(probes)
	} else {
		b, _ = json.Marshal(probes[0])
	}
	return string(b)
}

// DownwardAPIEnv are the variables whose values only the pod knows: its
// name and IP. In local mode the gate also reaches its siblings at the pod
// IP, because each local pod has its own loopback address.
func DownwardAPIEnv(local bool) []corev1.EnvVar {
	field := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path},
		}}
	}
	env := []corev1.EnvVar{
		field(EnvServingPod, "metadata.name"),
		field(EnvServingPodIP, "status.podIP"),
	}
	if local {
		env = append(env, field(EnvUpstreamHost, "status.podIP"))
	}
	return env
}
