package env

import (
	"fmt"
	"math"
	"os"
	goruntime "runtime"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podgate/podgate/internal/expansion"
)

// PodInfo is what the downward API can expose about a pod.
type PodInfo struct {
	Name, Namespace, UID string
	Labels, Annotations  map[string]string
	NodeName             string
	ServiceAccount       string
	PodIP, HostIP        string
}

// Var is one resolved variable.
type Var struct{ Name, Value string }

// List is a container's environment in the order it was defined; a later
// definition of a name replaces the earlier one in place.
type List struct {
	vars  []Var
	index map[string]int
}

// Set defines name, in place if it is defined already.
func (l *List) Set(name, value string) {
	if l.index == nil {
		l.index = map[string]int{}
	}
	if i, ok := l.index[name]; ok {
		l.vars[i].Value = value
		return
	}
	l.index[name] = len(l.vars)
	l.vars = append(l.vars, Var{name, value})
}

// Get is name's value; it is the lookup of $(VAR) expansion.
func (l *List) Get(name string) (string, bool) {
	i, ok := l.index[name]
	if !ok {
		return "", false
	}
	return l.vars[i].Value, true
}

// Strings is the environment as a process gets it.
func (l *List) Strings() []string {
	out := make([]string, len(l.vars))
	for i, v := range l.vars {
		out[i] = v.Name + "=" + v.Value
	}
	return out
}

// Base is what every container inherits from podgate: enough to find
// programs and a home, nothing else (a container starts from its image's
// environment, not the node's).
func Base(getenv func(string) string) []Var {
	var out []Var
	path := getenv("PATH")
	if path == "" {
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	}
	out = append(out, Var{"PATH", path})
	for _, k := range []string{"HOME", "USER", "TMPDIR", "LANG", "LC_ALL", "TZ"} {
		if v := getenv(k); v != "" {
			out = append(out, Var{k, v})
		}
	}
	return out
}

// Resolve builds container c's environment: base, then injected (what
// podgate sets: HOSTNAME, POD_IP, …), then c's envFrom, then its env in
// order, each value with $(VAR) expanded from the variables defined before
// it. Problems are errors under path (the container's field path).
func Resolve(base, injected []Var, c *corev1.Container, info PodInfo, path *field.Path) (*List, field.ErrorList) {
	var errs field.ErrorList
	l := &List{}
	for _, v := range base {
		l.Set(v.Name, v.Value)
	}
	for _, v := range injected {
		l.Set(v.Name, v.Value)
	}
	for i, from := range c.EnvFrom {
		p := path.Child("envFrom").Index(i)
		switch {
		case from.ConfigMapRef != nil:
			if from.ConfigMapRef.Optional == nil || !*from.ConfigMapRef.Optional {
				errs = append(errs, field.NotSupported(p.Child("configMapRef"), from.ConfigMapRef.Name,
					[]string{"optional references (podgate runs without a cluster, so ConfigMaps do not exist; set the variables with env instead)"}))
			}
		case from.SecretRef != nil:
			if from.SecretRef.Optional == nil || !*from.SecretRef.Optional {
				errs = append(errs, field.NotSupported(p.Child("secretRef"), from.SecretRef.Name,
					[]string{"optional references (podgate runs without a cluster, so Secrets do not exist; set the variables with env instead)"}))
			}
		}
	}
	for i, e := range c.Env {
		p := path.Child("env").Index(i)
		if e.ValueFrom == nil {
			l.Set(e.Name, expansion.Expand(e.Value, l.Get))
			continue
		}
		v, ok, err := valueFrom(e.ValueFrom, c, info, p.Child("valueFrom"))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			l.Set(e.Name, v)
		}
	}
	return l, errs
}

// valueFrom resolves one env source. ok is false for an optional reference
// that does not resolve (the variable is then not set, as the kubelet does
// for a missing optional key).
func valueFrom(src *corev1.EnvVarSource, c *corev1.Container, info PodInfo, p *field.Path) (string, bool, *field.Error) {
	switch {
	case src.FieldRef != nil:
		v, err := fieldRefValue(src.FieldRef.FieldPath, info, p.Child("fieldRef", "fieldPath"))
		return v, err == nil, err
	case src.ResourceFieldRef != nil:
		v, err := resourceFieldValue(src.ResourceFieldRef, c, p.Child("resourceFieldRef"))
		return v, err == nil, err
	case src.ConfigMapKeyRef != nil:
		if o := src.ConfigMapKeyRef.Optional; o != nil && *o {
			return "", false, nil
		}
		return "", false, field.NotSupported(p.Child("configMapKeyRef"), src.ConfigMapKeyRef.Name,
			[]string{"optional references (podgate runs without a cluster, so ConfigMaps do not exist; use value instead)"})
	case src.SecretKeyRef != nil:
		if o := src.SecretKeyRef.Optional; o != nil && *o {
			return "", false, nil
		}
		return "", false, field.NotSupported(p.Child("secretKeyRef"), src.SecretKeyRef.Name,
			[]string{"optional references (podgate runs without a cluster, so Secrets do not exist; use value instead)"})
	default:
		return "", false, field.Required(p, "one of fieldRef, resourceFieldRef, configMapKeyRef or secretKeyRef")
	}
}

// fieldRefValue is the downward API, with the field paths the kubelet
// supports for env.
func fieldRefValue(fp string, info PodInfo, p *field.Path) (string, *field.Error) {
	if key, ok := subscript(fp, "metadata.labels"); ok {
		return info.Labels[key], nil
	}
	if key, ok := subscript(fp, "metadata.annotations"); ok {
		return info.Annotations[key], nil
	}
	switch fp {
	case "metadata.name":
		return info.Name, nil
	case "metadata.namespace":
		return info.Namespace, nil
	case "metadata.uid":
		return info.UID, nil
	case "metadata.labels":
		return formatMap(info.Labels), nil
	case "metadata.annotations":
		return formatMap(info.Annotations), nil
	case "spec.nodeName":
		return info.NodeName, nil
	case "spec.serviceAccountName":
		return info.ServiceAccount, nil
	case "status.hostIP", "status.hostIPs":
		return info.HostIP, nil
	case "status.podIP", "status.podIPs":
		return info.PodIP, nil
	}
	return "", field.NotSupported(p, fp, []string{
		"metadata.name", "metadata.namespace", "metadata.uid", "metadata.labels['<KEY>']",
		"metadata.annotations['<KEY>']", "spec.nodeName", "spec.serviceAccountName",
		"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"})
}

// subscript parses prefix['key'] (or prefix["key"]).
func subscript(fp, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(fp, prefix+"[")
	if !ok || !strings.HasSuffix(rest, "]") || len(rest) < 3 {
		return "", false
	}
	rest = rest[:len(rest)-1]
	q := rest[0]
	if (q != '\'' && q != '"') || rest[len(rest)-1] != q || len(rest) < 2 {
		return "", false
	}
	return rest[1 : len(rest)-1], true
}

// formatMap is the downward API's form of a whole map: key="value" lines,
// sorted.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s=%q", k, m[k])
	}
	return b.String()
}

// resourceFieldValue exposes a container's requests and limits; an unset
// limit is the node's capacity, as the kubelet reports it.
func resourceFieldValue(ref *corev1.ResourceFieldSelector, c *corev1.Container, p *field.Path) (string, *field.Error) {
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	var q resource.Quantity
	var found bool
	switch ref.Resource {
	case "limits.cpu", "requests.cpu":
		q, found = lookupResource(c, ref.Resource, corev1.ResourceCPU)
		if !found {
			q = *resource.NewQuantity(int64(goruntime.NumCPU()), resource.DecimalSI)
		}
		v := math.Ceil(float64(q.MilliValue()) / float64(divisor.MilliValue()))
		return fmt.Sprintf("%d", int64(v)), nil
	case "limits.memory", "requests.memory", "limits.ephemeral-storage", "requests.ephemeral-storage":
		name := corev1.ResourceMemory
		if strings.HasSuffix(ref.Resource, "ephemeral-storage") {
			name = corev1.ResourceEphemeralStorage
		}
		q, found = lookupResource(c, ref.Resource, name)
		if !found {
			q = *resource.NewQuantity(nodeMemory(), resource.BinarySI)
		}
		v := math.Ceil(float64(q.Value()) / float64(divisor.Value()))
		return fmt.Sprintf("%d", int64(v)), nil
	}
	return "", field.NotSupported(p.Child("resource"), ref.Resource,
		[]string{"limits.cpu", "limits.memory", "limits.ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage"})
}

func lookupResource(c *corev1.Container, which string, name corev1.ResourceName) (resource.Quantity, bool) {
	list := c.Resources.Limits
	if strings.HasPrefix(which, "requests.") {
		list = c.Resources.Requests
	}
	q, ok := list[name]
	if !ok && strings.HasPrefix(which, "requests.") {
		// An unset request defaults to the limit.
		q, ok = c.Resources.Limits[name]
	}
	return q, ok
}

// nodeMemory is MemTotal from /proc/meminfo, 0 where there is none.
func nodeMemory() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err == nil {
				return kb * 1024
			}
		}
	}
	return 0
}
