package testapp

import (
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// The probe log lines of the app used in the original Knative experiments;
// scenario checks grep for them.
const (
	readinessTrueLog  = "Readiness probe called, responding with: true"
	readinessFalseLog = "Readiness probe called, responding with: false"
	livenessTrueLog   = "Liveness probe called, responding with: true"
	livenessFalseLog  = "Liveness probe called, responding with: false"
)

// Handler is the app's HTTP handler, for serving it elsewhere or driving it
// without sockets.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", s.readyz)
	mux.HandleFunc("/healthz", s.healthz)
	mux.HandleFunc("/livez", s.livez)
	mux.HandleFunc("/toggleReady", s.toggle("Readiness", &s.readyToggle))
	mux.HandleFunc("/toggleLive", s.toggle("Liveness", &s.liveToggle))
	mux.HandleFunc("/toggleExec", s.toggleExec)
	mux.HandleFunc("/redirect", s.redirect)
	mux.HandleFunc("/slow", s.slow)
	mux.HandleFunc("/resolve", s.resolve)
	mux.HandleFunc("/fetch", s.fetch)
	// Any other path is traffic: answer who served it, so load tests can
	// see which replica answered.
	mux.HandleFunc("/", s.root)
	return mux
}

func (s *Server) root(w http.ResponseWriter, _ *http.Request) {
	s.traffic.Add(1)
	fmt.Fprintln(w, s.cfg.Name)
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.Ready() {
		s.log.Info(readinessTrueLog, "path", r.URL.Path)
		fmt.Fprintln(w, "ready")
		return
	}
	s.log.Info(readinessFalseLog, "path", r.URL.Path)
	reason := "ready toggle is off"
	if !s.readyAfterElapsed.Load() {
		reason = fmt.Sprintf("ready-after %s has not elapsed", s.cfg.ReadyAfter)
	}
	http.Error(w, "not ready: "+reason, http.StatusServiceUnavailable)
}

// healthz behaves like agnhost's `liveness`: 200 for a while, then 500 for
// good; a 500 (not 503) is what that image taught users to expect.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	if s.Healthy() {
		s.log.Info(livenessTrueLog, "path", r.URL.Path)
		fmt.Fprintln(w, "ok")
		return
	}
	s.log.Info(livenessFalseLog, "path", r.URL.Path)
	reason := "live toggle is off"
	if s.liveExpired.Load() {
		reason = fmt.Sprintf("fail-live-after %s elapsed", s.cfg.FailLiveAfter)
	}
	http.Error(w, "not live: "+reason, http.StatusInternalServerError)
}

func (s *Server) livez(w http.ResponseWriter, r *http.Request) {
	if s.Live() {
		s.log.Info(livenessTrueLog, "path", r.URL.Path)
		fmt.Fprintln(w, "ok")
		return
	}
	s.log.Info(livenessFalseLog, "path", r.URL.Path)
	http.Error(w, "not live: live toggle is off", http.StatusInternalServerError)
}

// toggleMethodOK admits GET (what curl and the experiments used) and POST
// (what a toggle semantically is).
func toggleMethodOK(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodPost {
		return true
	}
	w.Header().Set("Allow", "GET, POST")
	http.Error(w, "toggles take GET or POST", http.StatusMethodNotAllowed)
	return false
}

// setParam reads ?set=true|false, which sets a toggle instead of flipping
// it, so a scripted scenario can be idempotent.
func setParam(r *http.Request) (value, given bool, err error) {
	raw := r.URL.Query().Get("set")
	if raw == "" {
		return false, false, nil
	}
	v, err := strconv.ParseBool(raw)
	if err != nil {
		return false, false, fmt.Errorf("invalid ?set=%q: want true or false", raw)
	}
	return v, true, nil
}

func (s *Server) toggle(what string, t *atomic.Bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !toggleMethodOK(w, r) {
			return
		}
		set, given, err := setParam(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var now bool
		if given {
			s.store(t, set)
			now = set
		} else {
			now = s.flip(t)
		}
		s.log.Info(fmt.Sprintf("%s toggled, now responding with: %t", what, now), "path", r.URL.Path)
		fmt.Fprintf(w, "%s: %t\n", what, now)
	}
}

func (s *Server) toggleExec(w http.ResponseWriter, r *http.Request) {
	if !toggleMethodOK(w, r) {
		return
	}
	if s.cfg.ExecFile == "" {
		http.Error(w, errNoExecFile.Error(), http.StatusNotFound)
		return
	}
	set, given, err := setParam(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	present := set
	if given {
		err = s.SetExecFile(set)
	} else {
		present, err = s.flipExecFile()
	}
	if err != nil {
		s.log.Error("exec file toggle failed", "path", s.cfg.ExecFile, "err", err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	verb := "removed: exec probe now fails"
	if present {
		verb = "created: exec probe now passes"
	}
	s.log.Info("Exec file "+verb, "execFile", s.cfg.ExecFile)
	fmt.Fprintf(w, "exec file %s: %t\n", s.cfg.ExecFile, present)
}

// redirect serves redirect-probe tests: ?loc= may point at this app or at
// another host (the kubelet follows only same-host redirects).
func (s *Server) redirect(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	loc := q.Get("loc")
	if loc == "" {
		http.Error(w, "missing ?loc=URL", http.StatusBadRequest)
		return
	}
	code := http.StatusFound
	if raw := q.Get("code"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 300 || n > 399 {
			http.Error(w, fmt.Sprintf("invalid ?code=%q: want a 3xx status", raw), http.StatusBadRequest)
			return
		}
		code = n
	}
	http.Redirect(w, r, loc, code)
}

// maxSlow bounds /slow, so a typo cannot hold a connection for days.
const maxSlow = 10 * time.Minute

// slow answers like / after ?for=D (a Go duration), or not at all if the
// client goes away first: a request that stays in flight, for drain tests.
func (s *Server) slow(w http.ResponseWriter, r *http.Request) {
	d, err := time.ParseDuration(r.URL.Query().Get("for"))
	if err != nil || d < 0 || d > maxSlow {
		http.Error(w, fmt.Sprintf("invalid ?for=%q: want a duration from 0s to %s", r.URL.Query().Get("for"), maxSlow), http.StatusBadRequest)
		return
	}
	t := s.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		fmt.Fprintln(w, s.cfg.Name)
	case <-r.Context().Done():
	}
}
