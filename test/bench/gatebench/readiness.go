package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"time"
)

// measureReadiness is the pod start: each trial starts a gate process
// whose serving container is not listening yet (the gate probes it with
// the injected aggressive TCP probe), sends a kubelet-style health check,
// which the gate holds until the pod is first ready (queue-proxy's long
// poll), opens the container's port 20-40 ms later (the gate's prober has
// reached its steady backoff by then), and times from the moment the port
// accepts connections until the held check is answered 200.
func measureReadiness(ctx context.Context, p *pod, trials int) ([]time.Duration, error) {
	if p.gate != nil {
		p.gate.kill()
		p.gate = nil
	}
	if p.app != nil {
		if err := p.app.term(); err != nil {
			return nil, err
		}
		p.app = nil
	}
	var lat []time.Duration
	for i := 0; i < trials; i++ {
		if ctx.Err() != nil {
			return lat, ctx.Err()
		}
		d, err := readinessOnce(ctx, p)
		if err != nil {
			return lat, fmt.Errorf("trial %d: %w", i+1, err)
		}
		lat = append(lat, d)
	}
	slices.Sort(lat)
	fmt.Printf("  port open -> gate answers ready: median %s  p90 %s  p99 %s  min %s  max %s\n",
		ms(quantile(lat, 0.5)), ms(quantile(lat, 0.9)), ms(quantile(lat, 0.99)), ms(lat[0]), ms(lat[len(lat)-1]))
	return lat, nil
}

func readinessOnce(ctx context.Context, p *pod) (time.Duration, error) {
	g, err := p.startGate()
	if err != nil {
		return 0, err
	}
	p.gate = g
	defer func() {
		g.kill()
		p.gate = nil
	}()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	url := "http://" + p.gateAddr(p.cfg.ServingPort) + "/"
	type answer struct {
		code int
		err  error
		at   time.Time
	}
	answered := make(chan answer, 1)
	go func() {
		code, err := health(client, url)
		answered <- answer{code, err, time.Now()}
	}()
	time.Sleep(20*time.Millisecond + rand.N(20*time.Millisecond))
	select {
	case a := <-answered:
		return 0, fmt.Errorf("before the container listens the gate answered %d (%v), want the health check held", a.code, a.err)
	default:
	}

	ln, err := net.Listen("tcp", p.appAddr())
	if err != nil {
		return 0, err
	}
	opened := time.Now()
	srv := &http.Server{Handler: http.NotFoundHandler(), ErrorLog: log.New(io.Discard, "", 0)}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	defer func() {
		_ = srv.Close()
		<-served
	}()
	select {
	case a := <-answered:
		if a.err != nil || a.code != http.StatusOK {
			return 0, fmt.Errorf("the held health check was answered %d (%v), want 200; log %s", a.code, a.err, g.log)
		}
		return a.at.Sub(opened), nil
	case <-time.After(startWait):
		return 0, fmt.Errorf("the held health check was not answered within %s; log %s", startWait, g.log)
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}
