package gatestatus

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Refusal reasons, as GateRequestRefused Events and logs name them.
const (
	reasonOtherPod      = "OtherPod"
	reasonNotCondition  = "NotTheGateCondition"
	reasonPatchType     = "PatchType"
	reasonUnknownCaller = "UnknownCaller"
)

// identify finds the pod that sent r by its TCP source address, and
// checks that it asks for itself. The source address is the one thing
// about a caller the network vouches for: a pod's network namespace owns
// its pod IP, and nothing inside the pod (a token, a header) is needed
// or trusted. On refusal it answers r and returns false.
func (s *Service) identify(w http.ResponseWriter, r *http.Request, verb, ns, name string) (*corev1.Pod, bool) {
	ip, err := sourceIP(r)
	if err != nil {
		s.refuse(w, r, verb, nil, reasonUnknownCaller, err.Error())
		return nil, false
	}
	pods, synced := s.waitForCaller(r, ip)
	switch {
	case !synced:
		s.metrics.requests.WithLabelValues(verb, outcomeNotReady).Inc()
		w.Header().Set("Retry-After", "1")
		writeStatus(w, apierrors.NewServiceUnavailable("the node status service has not listed the node's pods yet"))
		return nil, false
	case len(pods) == 0:
		s.refuse(w, r, verb, nil, reasonUnknownCaller, fmt.Sprintf("%s of pod %s/%s from %s refused: %s is the pod IP of no running pod of node %s (hostNetwork pods and finished pods are not served)",
			verb, ns, name, ip, ip, s.opts.Node))
		return nil, false
	case len(pods) > 1:
		s.refuse(w, r, verb, nil, reasonUnknownCaller, fmt.Sprintf("%s of pod %s/%s from %s refused: %s is the pod IP of %d pods of node %s (%s)",
			verb, ns, name, ip, ip, len(pods), s.opts.Node, podNames(pods)))
		return nil, false
	}
	p := pods[0]
	if p.Namespace != ns || p.Name != name {
		s.refuse(w, r, verb, p, reasonOtherPod, fmt.Sprintf("%s of pod %s/%s from %s refused: the caller is pod %s/%s, and a gate may read and write its own pod only",
			verb, ns, name, ip, p.Namespace, p.Name))
		return nil, false
	}
	s.markConnected(p)
	return p, true
}

func sourceIP(r *http.Request) (netip.Addr, error) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("caller address %q: %w", r.RemoteAddr, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("caller address %q: %w", r.RemoteAddr, err)
	}
	return ip.Unmap(), nil
}

// waitForCaller are the pods that may be the caller at ip, waiting up to
// IdentityWait for the informer to sync or to learn the address.
func (s *Service) waitForCaller(r *http.Request, ip netip.Addr) ([]*corev1.Pod, bool) {
	timer := time.NewTimer(s.opts.IdentityWait)
	defer timer.Stop()
	for {
		pods, synced, changed := s.pods.withIP(ip)
		if synced && len(pods) > 0 {
			return pods, true
		}
		select {
		case <-changed:
		case <-timer.C:
			return pods, synced
		case <-r.Context().Done():
			return pods, synced
		}
	}
}

func podNames(pods []*corev1.Pod) string {
	names := make([]string, len(pods))
	for i, p := range pods {
		names[i] = p.Namespace + "/" + p.Name
	}
	return strings.Join(names, ", ")
}

// refuse answers 403 with msg, counts and logs it, and writes
// GateRequestRefused on the caller's pod when it is known (rate-limited
// per pod and reason).
func (s *Service) refuse(w http.ResponseWriter, r *http.Request, verb string, caller *corev1.Pod, reason, msg string) {
	s.metrics.requests.WithLabelValues(verb, outcomeRefused).Inc()
	s.log.Warn("gate request refused", "reason", reason, "caller", r.RemoteAddr, "method", r.Method, "path", r.URL.Path, "message", msg)
	if caller != nil {
		s.events.warnLimited(caller, eventRequestRefused, reason, msg)
	}
	writeStatus(w, forbidden(msg))
}

func (s *Service) markConnected(p *corev1.Pod) {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	s.connected[p.UID] = true
}
