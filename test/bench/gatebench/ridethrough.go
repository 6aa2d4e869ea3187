package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"
)

const rideThroughConns = 16

type rideRun struct {
	proxy, stop string
	res         loadResult
}

// measureRideThrough is docs/facts.md §4's experiment with a real process: 16
// clients send requests back to back for 3 s; at 1 s the test app is
// stopped, and 1 s later a new one starts on the same port. "graceful" is
// SIGTERM (the app finishes the requests it has, as on a kubelet stop),
// "kill" is SIGKILL (a crash: its connections are dropped).
func measureRideThrough(ctx context.Context, p *pod, n int) ([]rideRun, error) {
	var runs []rideRun
	for _, proxy := range []string{"gate process", "plain ReverseProxy"} {
		for _, stop := range []string{"graceful", "kill"} {
			for range n {
				if ctx.Err() != nil {
					return runs, ctx.Err()
				}
				res, err := rideOnce(ctx, p, proxy == "gate process", stop == "kill")
				if err != nil {
					return runs, err
				}
				runs = append(runs, rideRun{proxy: proxy, stop: stop, res: res})
				fmt.Printf("  %-20s %-9s %6d failed of %6d requests", proxy, stop, res.failed, res.requests())
				if res.failed > 0 {
					fmt.Printf("  e.g. %.90s", res.example)
				}
				fmt.Println()
			}
		}
	}
	return runs, nil
}

// rideOnce restarts the app under load through the gate process, or
// through a plain reverse proxy built for the run.
func rideOnce(ctx context.Context, p *pod, throughGate, kill bool) (loadResult, error) {
	if throughGate {
		if err := waitHealth(ctx, p, http.StatusOK); err != nil {
			return loadResult{}, err
		}
		return restartUnderLoad(p, "http://"+p.gateAddr(p.cfg.ServingPort)+"/", kill)
	}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: p.appAddr()})
	rp.ErrorLog = log.New(io.Discard, "", 0)
	addr, stop, err := serve(rp)
	if err != nil {
		return loadResult{}, err
	}
	defer stop()
	return restartUnderLoad(p, "http://"+addr+"/", kill)
}

func restartUnderLoad(p *pod, front string, kill bool) (loadResult, error) {
	start := time.Now()
	l := startLoad(front, rideThroughConns, true)
	time.Sleep(time.Second)
	stopped := time.Now()
	err := p.stopApp(kill)
	if err == nil {
		time.Sleep(time.Until(stopped.Add(time.Second)))
		p.app, err = p.startApp()
	}
	time.Sleep(time.Until(start.Add(3 * time.Second)))
	res := l.finish()
	return res, err
}
