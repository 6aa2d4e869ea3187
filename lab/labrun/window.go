package labrun

import (
	"slices"
	"time"

	"github.com/podgate/podgate/record"
	"github.com/podgate/podgate/record/timeline"
)

// frontDoor is what a recording shows the front door knew: the workload
// (target) of each request, when it held a request of each workload for
// want of a ready pod, and when it took each pod out of routing — in its
// own words (pod-out) when it recorded them, else when the pod's
// endpoint stopped being ready (the EndpointSlice change it routes by, as
// the recording's own watch saw it).
type frontDoor struct {
	target map[uint64]string
	held   map[string][]time.Time
	left   map[string][]time.Time
	// answered: the recording has no routing decisions (Knative's
	// activator and ingress record none); its requests are the clients'
	// own, each with the pod that answered it.
	answered bool
}

func (j *judge) frontDoor() frontDoor {
	fd := frontDoor{target: map[uint64]string{}, held: map[string][]time.Time{}, left: map[string][]time.Time{}}
	said := map[string][]time.Time{}
	fd.answered = true
	for _, f := range j.m.Sorted() {
		if f.Kind == record.KindRoute {
			fd.answered = false
		}
		switch {
		case f.Kind == record.KindRequest:
			fd.target[f.Request.ID] = f.Request.Target
		case f.Kind == record.KindRoute && f.Route.Decision == record.DecisionHeld:
			fd.held[f.Route.Target] = append(fd.held[f.Route.Target], f.Time)
		case f.Kind == record.KindRoute && f.Route.Decision == record.DecisionPodOut:
			key := f.Namespace + "/" + f.Pod
			said[key] = append(said[key], f.Time)
		}
	}
	for _, e := range j.m.Endpoints {
		for _, s := range e.Spans {
			if e.Pod != "" && s.State == "ready" && !s.Open {
				fd.left[e.Pod] = append(fd.left[e.Pod], s.To)
			}
		}
	}
	for _, ts := range fd.left {
		slices.SortFunc(ts, time.Time.Compare)
	}
	for key, ts := range said {
		fd.left[key] = ts
	}
	return fd
}

// inWindow splits the requests sent to p in [from, to) (to zero: open)
// in two: those the front door sent once it showed it knew the pod was
// not ready — it held a request of the workload for want of a ready pod
// in the window, or, with no hold (another pod was ready), it took the
// pod out of routing in the window — which count, and
// those it sent before: the news on its way. The front door learns of a
// pod's state through a watch of the API's EndpointSlices, as the
// recording does, after the node agent wrote the pod's status and the
// endpoint controller followed (milliseconds idle, a few hundred on a
// loaded machine); a request it sends meanwhile reaches the pod's gate,
// which holds it while the pod's containers are not ready. A hold is the
// front door's own word, so it wins; with neither in the window (a front
// door that never learnt) every request counts. learned is when it knew.
func (fd frontDoor) inWindow(p *timeline.Pod, from, to time.Time) (counted, early []timeline.Request, learned time.Time) {
	if fd.answered {
		return answeredInWindow(p, from, to)
	}
	var in []timeline.Request
	for _, q := range p.Requests {
		if !q.Sent.Before(from) && (to.IsZero() || q.Sent.Before(to)) {
			in = append(in, q)
		}
	}
	if len(in) == 0 {
		return nil, nil, time.Time{}
	}
	learned = from
	within := func(ts []time.Time) (time.Time, bool) {
		for _, t := range ts {
			if !t.Before(from) && (to.IsZero() || t.Before(to)) {
				return t, true
			}
		}
		return time.Time{}, false
	}
	h, held := within(fd.held[fd.target[in[0].ID]])
	l, left := within(fd.left[p.Key])
	switch {
	case held:
		learned = h
	case left:
		learned = l
	}
	// News that takes longer than the allowance is a router that did not
	// follow: what it sent meanwhile counts (a pod killed while it was
	// still published ready keeps getting requests until it exits).
	if cap := from.Add(NewsAllowance); learned.After(cap) {
		learned = cap
	}
	for _, q := range in {
		if q.Sent.Before(learned) {
			early = append(early, q)
		} else {
			counted = append(counted, q)
		}
	}
	return counted, early, learned
}

// NewsAllowance is how long after a pod's readiness changed an answer
// from it is still the news on its way when nothing says when the
// routers learnt (a recording without routing decisions: Knative's
// routers). It is the goal podgate sets under Knative: from 1 s after a
// container turns unready, its pod's serving container gets no request.
// It applies at both ends of a not-ready window: the gate opens its door
// as soon as its own probes pass, and the pod's Ready condition follows
// only at the kubelet's next probe of the queue container (1 s × 1),
// so answers in the window's last second are the gate knowing first.
const NewsAllowance = time.Second

// answeredInWindow judges by when the pod answered, which is all a
// client sees: an answer in [from+NewsAllowance, end−NewsAllowance)
// counts, one nearer the window's ends is the news on its way; end is
// to, or the gate's condition turning True when that came first. A request
// sent while the pod was not ready and held by its gate until it was
// ready again is answered after that: the serving container never had it
// while the pod was not ready.
func answeredInWindow(p *timeline.Pod, from, to time.Time) (counted, early []timeline.Request, learned time.Time) {
	learned = from.Add(NewsAllowance)
	var until time.Time
	if !to.IsZero() {
		until = to.Add(-NewsAllowance)
	}
	// The gate's own word that the pod is ready again (its condition)
	// comes before the pod's Ready, which waits for the kubelet's next
	// probe of the queue container: the window's end is the earlier.
	for _, g := range p.Gate {
		if g.State == "ready" && g.From.After(from) && (to.IsZero() || g.From.Before(to)) {
			until = g.From.Add(-NewsAllowance)
			break
		}
	}
	for _, q := range p.Requests {
		if q.End.Before(from) || (!to.IsZero() && !q.End.Before(to)) {
			continue
		}
		if q.End.Before(learned) || (!until.IsZero() && !q.End.Before(until)) {
			early = append(early, q)
		} else {
			counted = append(counted, q)
		}
	}
	return counted, early, learned
}
