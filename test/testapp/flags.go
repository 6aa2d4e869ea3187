package testapp

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
)

// FlagSet is what both binaries bind the test app's flags to: the standard
// library's *flag.FlagSet and cobra's *pflag.FlagSet both satisfy it, so the
// two share one flag definition.
type FlagSet interface {
	StringVar(p *string, name, value, usage string)
	DurationVar(p *time.Duration, name string, value time.Duration, usage string)
}

// Flags is the command-line form of Config: ports rather than addresses, and
// environment fallbacks still to apply.
type Flags struct {
	// Port and GRPCPort stay strings so "not given" differs from port 0.
	Port          string
	GRPCPort      string
	Name          string
	ReadyAfter    time.Duration
	FailLiveAfter time.Duration
	ExecFile      string
	SleepOnTerm   time.Duration
}

// Bind registers the test app's flags on fs.
func (f *Flags) Bind(fs FlagSet) {
	fs.StringVar(&f.Port, "port", "", "HTTP port to listen on (default $PORT; 0 picks a free port)")
	fs.StringVar(&f.GRPCPort, "grpc-port", "", "also serve grpc.health.v1 on this port (off by default)")
	fs.StringVar(&f.Name, "name", "", `name answered on / (default $HOSTNAME, else "testapp")`)
	fs.DurationVar(&f.ReadyAfter, "ready-after", 0, "fail readiness for this long after start")
	fs.DurationVar(&f.FailLiveAfter, "fail-live-after", 0, "fail /healthz from this long after start on (0: never)")
	fs.StringVar(&f.ExecFile, "exec-file", "", "file created at start and removed/created by /toggleExec, for exec probes that cat it")
	fs.DurationVar(&f.SleepOnTerm, "sleep-on-term", 0, "on SIGTERM keep serving this long before exiting")
}

// Config resolves the flags against the environment (getenv is os.Getenv
// in the binaries): $PORT when --port is absent, $POD_IP (default
// 127.0.0.1) as the address to bind, $HOSTNAME as the default name. Every
// error it returns is a usage error.
//
// A loopback $POD_IP is a pod of `podgate run`, sharing the host's
// network: the app binds that address alone, so replicas side by side
// each have their port. Any other $POD_IP is a pod with a network of its
// own: the app binds every address, so the gate beside it (at 127.0.0.1
// in the pod) and the node (at the pod IP) both reach it.
func (f *Flags) Config(getenv func(string) string) (Config, error) {
	port, err := f.httpPort(getenv)
	if err != nil {
		return Config{}, err
	}
	host, err := bindHost(getenv("POD_IP"))
	if err != nil {
		return Config{}, err
	}
	cfg := Config{
		Name:          f.Name,
		Addr:          net.JoinHostPort(host, strconv.Itoa(port)),
		ReadyAfter:    f.ReadyAfter,
		FailLiveAfter: f.FailLiveAfter,
		ExecFile:      f.ExecFile,
		SleepOnTerm:   f.SleepOnTerm,
	}
	if f.GRPCPort != "" {
		gport, err := parsePort("--grpc-port", f.GRPCPort)
		if err != nil {
			return Config{}, err
		}
		if gport != 0 && gport == port {
			return Config{}, fmt.Errorf("--grpc-port %d is the HTTP port too: they need separate ports", gport)
		}
		cfg.GRPCAddr = net.JoinHostPort(host, strconv.Itoa(gport))
	}
	if cfg.Name == "" {
		cfg.Name = getenv("HOSTNAME")
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{
		{"--ready-after", f.ReadyAfter},
		{"--fail-live-after", f.FailLiveAfter},
		{"--sleep-on-term", f.SleepOnTerm},
	} {
		if d.v < 0 {
			return Config{}, fmt.Errorf("invalid %s %s: must not be negative", d.flag, d.v)
		}
	}
	return cfg.withDefaults(), nil
}

// bindHost is the address to listen on for $POD_IP (see Config).
func bindHost(podIP string) (string, error) {
	if podIP == "" {
		return "127.0.0.1", nil
	}
	ip := net.ParseIP(podIP)
	switch {
	case ip == nil:
		return "", fmt.Errorf("invalid $POD_IP %q: not an IP address", podIP)
	case ip.IsLoopback():
		return podIP, nil
	case ip.To4() != nil:
		return "0.0.0.0", nil
	}
	return "::", nil
}

func (f *Flags) httpPort(getenv func(string) string) (int, error) {
	if f.Port != "" {
		return parsePort("--port", f.Port)
	}
	if env := getenv("PORT"); env != "" {
		return parsePort("$PORT", env)
	}
	return 0, errors.New("no HTTP port: pass --port or set $PORT")
}

func parsePort(source, s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 65535 {
		return 0, fmt.Errorf("invalid %s %q: want a port number 0-65535", source, s)
	}
	return n, nil
}
