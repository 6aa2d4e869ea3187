package activator

import "sort"

// Status is a target's state at one instant: what service status and
// `podgate get` report (NoHealthyBackends when Ready is 0).
type Status struct {
	Target   string
	Ready    int // backends that may take traffic
	Queued   int // requests held for a backend
	Backends []BackendStatus
}

// BackendStatus is one pod as the activator sees it.
type BackendStatus struct {
	Name, Addr    string
	EndpointReady bool
	Terminating   bool
	FastPath      bool
	GateReady     bool
	// Usable: the pod gets new requests.
	Usable   bool
	InFlight int
	// Probes counts the health checks answered so far.
	Probes    int
	LastError string
}

// Status returns the target's state, pods sorted by name.
func (t *Target) Status() Status {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := Status{Target: t.name, Ready: t.ready, Queued: t.bal.waiters.Len()}
	for _, b := range t.bal.backends {
		s.Backends = append(s.Backends, BackendStatus{
			Name: b.pod.Name, Addr: b.pod.Addr,
			EndpointReady: b.pod.Ready, Terminating: b.pod.Terminating, FastPath: b.pod.FastPath,
			GateReady: b.gateReady, Usable: b.usable(), InFlight: b.inflight,
			Probes: b.probes, LastError: b.lastError,
		})
	}
	sort.Slice(s.Backends, func(i, j int) bool { return s.Backends[i].Name < s.Backends[j].Name })
	return s
}
