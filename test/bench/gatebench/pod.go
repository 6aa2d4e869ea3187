package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/admission/inject"
	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/test/bench/internal/benchenv"
)

// manifest is examples/hello.yaml: a Knative Service running the test app,
// whose readiness probe is Knative's default (TCP on the user port,
// periodSeconds 0: aggressive).
const manifest = `apiVersion: serving.knative.dev/v1
kind: Service
metadata:
  name: hello
spec:
  template:
    spec:
      containers:
        - image: ghcr.io/podgate/testapp
          ports:
            - containerPort: 8080
`

// startWait bounds waiting for a process to listen or exit.
const startWait = 15 * time.Second

// pod is one local pod: the test app as serving container (its own
// process) and, when started, the gate as its own process, on the pod's
// loopback address.
type pod struct {
	ip, name string
	dir      string
	bin      string // podgate: the test app
	gateBin  string // podgate-gate: the gate, as its image ships it
	binSize  int64  // the gate binary's
	keep     bool

	gateEnv  []string // as inject.Gate writes it, values resolved
	appEnv   []string
	cfg      contract.Config
	userPort int

	app    *proc
	gate   *proc // the gate process, while one runs
	starts int   // processes started, for log file names
}

func newPod(ctx context.Context, o options) (p *pod, err error) {
	dir, err := os.MkdirTemp("", "gatebench-")
	if err != nil {
		return nil, err
	}
	p = &pod{dir: dir, keep: o.keepFiles, name: "hello-00001-gatebench"}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	if p.bin = o.podgate; p.bin == "" {
		if p.bin, err = benchenv.BuildPodgate(ctx, dir); err != nil {
			return nil, err
		}
	}
	if p.gateBin = o.gate; p.gateBin == "" {
		if p.gateBin, err = benchenv.BuildGate(ctx, dir); err != nil {
			return nil, err
		}
	}
	st, err := os.Stat(p.gateBin)
	if err != nil {
		return nil, err
	}
	p.binSize = st.Size()

	gateC, appC, err := injected()
	if err != nil {
		return nil, err
	}
	if p.ip, err = pickPodIP(o.podIP, portsOf(gateC)); err != nil {
		return nil, err
	}
	if p.gateEnv, err = p.resolve(gateC.Env); err != nil {
		return nil, err
	}
	// `podgate run` points the status source at its node agent; there is
	// none here, and the pod has no exec-probed container that needs one.
	p.gateEnv = setVar(p.gateEnv, contract.EnvStatusSource, contract.StatusSourceNone)
	if p.cfg, err = contract.Decode(lookup(p.gateEnv)); err != nil {
		return nil, fmt.Errorf("the injected gate environment: %w", err)
	}
	p.userPort = p.cfg.UserPort
	if p.appEnv, err = p.resolve(appC.Env); err != nil {
		return nil, err
	}
	// What `podgate run` gives every container: its pod's address to bind.
	p.appEnv = append(p.appEnv, "POD_IP="+p.ip, "HOSTNAME="+p.name)
	if p.app, err = p.startApp(); err != nil {
		return nil, err
	}
	return p, nil
}

// injected is the gate container and the serving container of the
// injected hello Service, as `podgate run` would start them.
func injected() (gate, app *corev1.Container, err error) {
	m, err := workload.Load(strings.NewReader(manifest), "hello.yaml")
	if err != nil {
		return nil, nil, err
	}
	w, err := inject.Gate(m.Workloads[0], inject.Options{Local: true})
	if err != nil {
		return nil, nil, err
	}
	gate, app = w.Container(contract.GateContainerName), w.Container(w.ServingContainer)
	if gate == nil || app == nil {
		return nil, nil, errors.New("the injected pod lacks the gate or the serving container")
	}
	return gate, app, nil
}

func portsOf(c *corev1.Container) []int {
	ports := []int{8080}
	for _, p := range c.Ports {
		ports = append(ports, int(p.ContainerPort))
	}
	return ports
}

// resolve fills in the downward API as the local runtime does.
func (p *pod) resolve(env []corev1.EnvVar) ([]string, error) {
	out := make([]string, 0, len(env))
	for _, e := range env {
		v := e.Value
		if e.ValueFrom != nil {
			if e.ValueFrom.FieldRef == nil {
				return nil, fmt.Errorf("env %s: only fieldRef is supported here", e.Name)
			}
			switch e.ValueFrom.FieldRef.FieldPath {
			case "metadata.name":
				v = p.name
			case "metadata.namespace":
				v = "default"
			case "status.podIP":
				v = p.ip
			default:
				return nil, fmt.Errorf("env %s: field %s not supported here", e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
		}
		out = append(out, e.Name+"="+v)
	}
	return out, nil
}

func setVar(env []string, name, value string) []string {
	for i, kv := range env {
		if strings.HasPrefix(kv, name+"=") {
			env[i] = name + "=" + value
			return env
		}
	}
	return append(env, name+"="+value)
}

func lookup(env []string) func(string) string {
	return func(name string) string {
		for _, kv := range env {
			if k, v, _ := strings.Cut(kv, "="); k == name {
				return v
			}
		}
		return ""
	}
}

// pickPodIP is want, or a 127.0.0.x whose pod ports are all free.
func pickPodIP(want string, ports []int) (string, error) {
	candidates := []string{want}
	if want == "" {
		candidates = candidates[:0]
		for _, x := range rand.Perm(240) {
			candidates = append(candidates, "127.0.0."+strconv.Itoa(x+10))
		}
	} else if ip := net.ParseIP(want); ip == nil || !ip.IsLoopback() {
		return "", fmt.Errorf("-pod-ip %q: not a loopback address", want)
	}
	for _, ip := range candidates {
		if portsFree(ip, ports) {
			return ip, nil
		}
	}
	return "", fmt.Errorf("no loopback address with ports %v free", ports)
}

func portsFree(ip string, ports []int) bool {
	for _, port := range ports {
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err != nil {
			return false
		}
		ln.Close()
	}
	return true
}

func (p *pod) appAddr() string { return net.JoinHostPort(p.ip, strconv.Itoa(p.userPort)) }

func (p *pod) gateAddr(port int) string { return net.JoinHostPort(p.ip, strconv.Itoa(port)) }

// startApp starts the test app and waits until it accepts connections.
func (p *pod) startApp() (*proc, error) {
	a, err := p.start("app", []string{"testapp"}, p.appEnv)
	if err != nil {
		return nil, err
	}
	if err := a.waitDial(p.appAddr()); err != nil {
		a.kill()
		return nil, err
	}
	return a, nil
}

// stopApp stops the test app: SIGTERM (it finishes what it serves, as on
// a kubelet stop) or SIGKILL (a crash: connections are dropped).
func (p *pod) stopApp(kill bool) error {
	if kill {
		p.app.kill()
		return nil
	}
	return p.app.term()
}

// startGate starts `podgate gate` and waits until its serving port answers.
func (p *pod) startGate() (*proc, error) {
	g, err := p.start("gate", []string{"gate"}, p.gateEnv)
	if err != nil {
		return nil, err
	}
	if err := g.waitDial(p.gateAddr(p.cfg.ServingPort)); err != nil {
		g.kill()
		return nil, err
	}
	return g, nil
}

func (p *pod) start(what string, args, env []string) (*proc, error) {
	p.starts++
	logPath := filepath.Join(p.dir, fmt.Sprintf("%s-%03d.log", what, p.starts))
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	bin := p.bin
	if what == "gate" {
		bin = p.gateBin
	}
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start podgate %s: %w", args[0], err)
	}
	pr := &proc{what: what, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		pr.err = cmd.Wait()
		log.Close()
		close(pr.done)
	}()
	return pr, nil
}

func (p *pod) close() {
	for _, pr := range []*proc{p.gate, p.app} {
		if pr != nil {
			pr.kill()
		}
	}
	if p.keep {
		fmt.Printf("kept %s\n", p.dir)
		return
	}
	_ = os.RemoveAll(p.dir)
}

// proc is a child process this benchmark started.
type proc struct {
	what string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

func (pr *proc) pid() int { return pr.cmd.Process.Pid }

// waitDial waits until addr accepts a connection, or the process exits.
func (pr *proc) waitDial(addr string) error {
	deadline := time.Now().Add(startWait)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-pr.done:
			return fmt.Errorf("%s exited before listening on %s (%v); log %s", pr.what, addr, pr.err, pr.log)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not listening on %s after %s; log %s", pr.what, addr, startWait, pr.log)
		}
		time.Sleep(time.Millisecond)
	}
}

// term sends SIGTERM and waits for the exit.
func (pr *proc) term() error {
	_ = pr.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-pr.done:
		return nil
	case <-time.After(startWait):
		pr.kill()
		return fmt.Errorf("%s did not exit on SIGTERM within %s; killed", pr.what, startWait)
	}
}

// kill sends SIGKILL and waits for the exit.
func (pr *proc) kill() {
	select {
	case <-pr.done:
		return
	default:
	}
	_ = pr.cmd.Process.Kill()
	<-pr.done
}
