package readiness

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/podgate/podgate/probe"
)

// TestRecheckMarksDownAnAggressiveContainerWhosePortClosed: after the
// first readiness the aggressive probe's worker ticks every second with a
// failure threshold of 3; Recheck sees the closed port at once.
func TestRecheckMarksDownAnAggressiveContainerWhosePortClosed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := portOf(t, ln.Addr().String())
	s := start(t, []Container{{Name: "app", Probe: tcpProbe(port, 0), Serving: true}}, Options{UserPort: port})
	s.waitReady(t, true)
	s.Recheck()
	if !s.Ready() {
		t.Fatal("Recheck of a container that accepts marked it down")
	}
	_ = ln.Close()
	s.Recheck()
	if s.Ready() {
		t.Fatal("still ready after Recheck of a closed port")
	}
	if r := s.report(t, "app"); r.Ready {
		t.Errorf("report says ready: %+v", r)
	}
}

// TestRecheckOfConcurrentChecksSharesOneAttempt: checks arriving while a
// round is in flight wait for it instead of probing again, as queue-proxy's
// checks share its probe in flight.
func TestRecheckOfConcurrentChecksSharesOneAttempt(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := portOf(t, ln.Addr().String())
	var attempts atomic.Int64
	s := start(t, []Container{{Name: "app", Probe: tcpProbe(port, 0), Serving: true}}, Options{UserPort: port,
		OnAttempt: func(string, probe.Outcome) { attempts.Add(1) }})
	s.waitReady(t, true)
	// Hold the next round in flight: the round is taken under the lock.
	s.mu.Lock()
	before := attempts.Load()
	var wg sync.WaitGroup
	const checks = 50
	for range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Recheck()
		}()
	}
	s.mu.Unlock()
	wg.Wait()
	// The worker ticks every second; allow its one attempt.
	if n := attempts.Load() - before; n < 1 || n > checks/5 {
		t.Errorf("%d attempts for %d concurrent checks, want a few shared rounds", n, checks)
	}
}

// TestRecheckWithoutAnAggressiveProbeProbesNothing: a periodic probe's
// state is the kubelet's, thresholds included: no extra attempt.
func TestRecheckWithoutAnAggressiveProbeProbesNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := portOf(t, ln.Addr().String())
	s := start(t, []Container{{Name: "app", Probe: tcpProbe(port, 10), Serving: true}}, Options{UserPort: port})
	s.waitReady(t, true)
	_ = ln.Close()
	s.Recheck()
	if !s.Ready() {
		t.Error("Recheck changed a periodic probe's verdict")
	}
}
