package labrun

import (
	"time"

	"github.com/podgate/podgate/record"
	"github.com/podgate/podgate/record/timeline"
)

// frontDoor is what a recording shows the front door knew: the workload
// (target) of each request, and when it held a request of each workload
// for want of a ready pod.
type frontDoor struct {
	target map[uint64]string
	held   map[string][]time.Time
}

func (j *judge) frontDoor() frontDoor {
	fd := frontDoor{target: map[uint64]string{}, held: map[string][]time.Time{}}
	for _, f := range j.m.Sorted() {
		switch {
		case f.Kind == record.KindRequest:
			fd.target[f.Request.ID] = f.Request.Target
		case f.Kind == record.KindRoute && f.Route.Decision == record.DecisionHeld:
			fd.held[f.Route.Target] = append(fd.held[f.Route.Target], f.Time)
		}
	}
	return fd
}

// inWindow splits the requests sent to p in [from, to) (to zero: open)
// in two: those the front door sent once it had shown that it knew no
// pod of the workload was ready — it held a request of the workload in
// the window — which count, and those it sent before: the news on its
// way. The front door learns of a pod's state through a watch of the
// API, as the recording does, milliseconds after the node agent wrote
// it; a request it sends in those milliseconds reaches the pod's gate,
// which holds it while the pod's containers are not ready. Without a
// hold in the window (a workload with other pods ready, or a front door
// that never learnt) every request counts. learned is the first hold.
func (fd frontDoor) inWindow(p *timeline.Pod, from, to time.Time) (counted, early []timeline.Request, learned time.Time) {
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
	for _, h := range fd.held[fd.target[in[0].ID]] {
		if !h.Before(from) && (to.IsZero() || h.Before(to)) {
			learned = h
			break
		}
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
