package main

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/http/pprof"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"github.com/vishvananda/netlink"
)

// The roles this binary plays when it re-executes itself.
const (
	roleUpstream = "-serve-upstream" // ADDR: the upstream every path ends at
	roleProxy    = "-serve-proxy"    // ADDR UPSTREAM CONNS: the tuned reverse proxy
	roleCgroup   = "-exec-in-cgroup" // DIR PROGRAM ARGS…: join a cgroup, then exec
	roleCPU      = "-exec-on-cpu"    // CPU PROGRAM ARGS…: pin to one CPU, then exec
)

// inNetnsEnv marks the copy of this command that runs in the benchmark's
// own network namespace.
const inNetnsEnv = "QUEUEBENCH_IN_NETNS"

// runRole runs one of the roles; ok is false when arg names none.
func runRole(arg string, args []string) (code int, ok bool) {
	var err error
	switch arg {
	case roleUpstream:
		err = serveUpstream(args)
	case roleProxy:
		err = serveProxy(args)
	case roleCgroup:
		err = execInCgroup(args)
	case roleCPU:
		err = execOnCPU(args)
	default:
		return 0, false
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "queuebench %s: %v\n", arg, err)
		return 1, true
	}
	return 0, true
}

// upstreamBody is what the upstream answers: a small page, as a
// "hello world" function of a Knative user answers.
var upstreamBody = []byte("Hello from the upstream of queuebench.\n")

// serveUpstream is the upstream: a plain net/http server answering every
// request with upstreamBody.
func serveUpstream(args []string) error {
	if len(args) != 1 {
		return errors.New("want ADDR")
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(upstreamBody)))
		_, _ = w.Write(upstreamBody)
	})
	return listenAndServe(args[0], h)
}

// serveProxy is the tuned reverse proxy: httputil.ReverseProxy with a
// keep-alive pool as large as the load and a buffer pool for the copy,
// as a careful user of the standard library would write it.
func serveProxy(args []string) error {
	if len(args) != 3 {
		return errors.New("want ADDR UPSTREAM CONNS")
	}
	conns, err := strconv.Atoi(args[2])
	if err != nil || conns < 1 {
		return fmt.Errorf("CONNS %q: want a positive number", args[2])
	}
	target := &url.URL{Scheme: "http", Host: args[1]}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.SetXForwarded()
		},
		Transport: &http.Transport{
			MaxIdleConns:        conns,
			MaxIdleConnsPerHost: conns,
			DisableCompression:  true,
		},
		BufferPool: &bufferPool{},
		ErrorLog:   log.New(io.Discard, "", 0),
	}
	if os.Getenv(profileEnv) != "" {
		go func() {
			_ = http.ListenAndServe(net.JoinHostPort(podIP, strconv.Itoa(profilingPort)), pprofMux())
		}()
	}
	return listenAndServe(args[0], rp)
}

// pprofMux serves Go's profiles at /debug/pprof/, as Knative's
// profiling port does.
func pprofMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	return mux
}

// bufferPool is httputil.BufferPool over a sync.Pool of 32 KiB buffers.
type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, 32<<10)
}

func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }

// listenAndServe serves h on addr until SIGTERM.
func listenAndServe(addr string, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ErrorLog: log.New(io.Discard, "", 0)}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	go func() {
		<-sig
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// execInCgroup moves this process into the cgroup DIR, then becomes
// PROGRAM: the program starts inside the cgroup, so the Go runtime of a
// Go program sees its CPU limit from the first instruction (it sizes
// GOMAXPROCS from it), as in a container.
func execInCgroup(args []string) error {
	if len(args) < 2 {
		return errors.New("want DIR PROGRAM [ARGS…]")
	}
	procs := filepath.Join(args[0], "cgroup.procs")
	if err := os.WriteFile(procs, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return fmt.Errorf("joining the cgroup: %w", err)
	}
	return execProgram(args[1:])
}

// execProgram becomes the program args[0] with its arguments.
func execProgram(args []string) error {
	prog, err := exec.LookPath(args[0])
	if err != nil {
		return err
	}
	return syscall.Exec(prog, args, os.Environ())
}

// reexecInNetns runs this command again in a new network namespace and
// returns its exit code. The namespace ends with the process.
func reexecInNetns() int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "queuebench:", err)
		return 1
	}
	cmd := exec.Command(self, os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), inNetnsEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	// The child gets the signals of a terminal's Ctrl-C itself; this
	// process only waits for it.
	signal.Ignore(os.Interrupt, syscall.SIGTERM)
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		fmt.Fprintf(os.Stderr, "queuebench: a network namespace of its own (run as root): %v\n", err)
		return 1
	}
	return 0
}

// setUpNetns brings the new namespace's loopback up: it starts down.
func setUpNetns() error {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("the namespace's loopback: %w", err)
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		return fmt.Errorf("bringing the namespace's loopback up: %w", err)
	}
	return nil
}
