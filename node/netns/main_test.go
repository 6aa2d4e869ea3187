//go:build linux

package netns

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The tests never change the test process's own network namespace: every
// test that builds a pod network re-runs this binary as a child in a new
// namespace (StartInNewNetns) with childEnv naming what the child does.
// The same binary also plays the pods' processes.
const (
	childEnv = "PODNET_TEST_CHILD"
	cidrEnv  = "PODNET_TEST_CIDR"
	nameEnv  = "PODNET_TEST_NAME"
	urlEnv   = "PODNET_TEST_URL"
)

// waitLimit bounds every wait of the tests; polls inside it are short.
const waitLimit = 30 * time.Second

// children are the roles of the re-run binary, by childEnv.
var children = map[string]func() error{
	"serve":     serveChild,
	"get":       getChild,
	"preflight": preflightChild,
	"two-pods":  twoPodsChild,
	"reach":     reachChild,
	"close":     closeChild,
	"exhaust":   exhaustChild,
	"guard":     guardChild,
	"stuck":     stuckChild,
	"hold":      holdChild,
	"forward":   forwardChild,
	"reverse":   reverseChild,
}

// init keeps the main goroutine on the main thread, so no other goroutine
// runs there. Go never ends the main thread: a goroutine that exits while
// locked to it (as Do leaves a thread whose way back failed) parks it for
// good instead, still in the pod's namespace — and /proc/self/ns/net,
// which is the main thread's, would then name the pod's namespace.
func init() { runtime.LockOSThread() }

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		fn, ok := children[role]
		if !ok {
			fmt.Fprintf(os.Stderr, "unknown %s=%q\n", childEnv, role)
			os.Exit(2)
		}
		if err := fn(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", role, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// serveChild is a pod's process: HTTP on 0.0.0.0:8080 of its namespace,
// answering "NAME from CLIENT-IP".
func serveChild() error {
	ln, err := net.Listen("tcp", "0.0.0.0:8080")
	if err != nil {
		return err
	}
	name := os.Getenv(nameEnv)
	return http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		fmt.Fprintf(w, "%s from %s", name, host)
	}))
}

// getChild GETs urlEnv once and prints the body.
func getChild() error {
	body, err := get(os.Getenv(urlEnv))
	if err != nil {
		return err
	}
	fmt.Print(body)
	return nil
}

// preflightChild prints Preflight's verdict.
func preflightChild() error {
	if err := Preflight(); err != nil {
		fmt.Print(err.Error())
		return nil
	}
	// The scratch namespace's thread came back.
	if err := allThreadsHome(); err != nil {
		return err
	}
	fmt.Print("ok")
	return nil
}

// get is one GET without keep-alive.
func get(url string) (string, error) {
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// pollGet GETs url until it answers with a body starting with want.
func pollGet(url, want string) (string, error) {
	deadline := time.Now().Add(waitLimit)
	for {
		body, err := get(url)
		if err == nil && strings.HasPrefix(body, want) {
			return body, nil
		}
		if time.Now().After(deadline) {
			return body, fmt.Errorf("GET %s: want %q, got %q (%v)", url, want, body, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// self is the path of this test binary.
func self() string {
	p, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return p
}

// childCmd is this binary in role, with extra environment.
func childCmd(role string, env ...string) *exec.Cmd {
	cmd := exec.Command(self())
	cmd.Env = append(os.Environ(), append([]string{childEnv + "=" + role}, env...)...)
	return cmd
}

// runInNetns runs role in a new network namespace to its end and returns
// its output; a failure in the child fails the test with its stderr.
func runInNetns(t *testing.T, role string, env ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	cmd := childCmd(role, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := StartInNewNetns(cmd); err != nil {
		t.Fatal(err)
	}
	stop := context.AfterFunc(ctx, func() { _ = cmd.Process.Kill() })
	defer stop()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%s in a new network namespace: %v\nstderr:\n%s", role, err, errb.String())
	}
	return out.String()
}

// liveChild is a child the test talks to: lines on its stdout, its stdin
// closed to end it.
type liveChild struct {
	cmd   *exec.Cmd
	out   *bufio.Reader
	in    io.WriteCloser
	errb  *bytes.Buffer
	ended bool
}

func startLive(t *testing.T, cmd *exec.Cmd, newNetns bool) *liveChild {
	t.Helper()
	c := &liveChild{cmd: cmd, errb: &bytes.Buffer{}}
	cmd.Stderr = c.errb
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	outR, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if c.in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if newNetns {
		err = StartInNewNetns(cmd)
	} else {
		err = cmd.Start()
	}
	if err != nil {
		t.Fatal(err)
	}
	c.out = bufio.NewReader(outR)
	t.Cleanup(func() {
		if !c.ended {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return c
}

// line reads the child's next line of output, failing the test when the
// child ends or stays silent past waitLimit.
func (c *liveChild) line(t *testing.T) string {
	t.Helper()
	type res struct {
		s   string
		err error
	}
	ch := make(chan res, 1)
	go func() { s, err := c.out.ReadString('\n'); ch <- res{s, err} }()
	select {
	case r := <-ch:
		if r.err != nil {
			_ = c.cmd.Process.Kill()
			_ = c.cmd.Wait()
			c.ended = true
			t.Fatalf("child output ended: %v\nstderr:\n%s", r.err, c.errb.String())
		}
		return strings.TrimSpace(r.s)
	case <-time.After(waitLimit):
		_ = c.cmd.Process.Kill() // unblocks the reader
		<-ch
		_ = c.cmd.Wait()
		c.ended = true
		t.Fatalf("child said nothing for %s\nstderr:\n%s", waitLimit, c.errb.String())
		return ""
	}
}

// finish closes the child's stdin (its signal to stop) and waits for a
// clean exit.
func (c *liveChild) finish(t *testing.T) {
	t.Helper()
	_ = c.in.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		c.ended = true
		if err != nil {
			t.Fatalf("child: %v\nstderr:\n%s", err, c.errb.String())
		}
	case <-time.After(waitLimit):
		_ = c.cmd.Process.Kill()
		<-done
		c.ended = true
		t.Fatalf("child did not stop within %s\nstderr:\n%s", waitLimit, c.errb.String())
	}
}

// netnsHolders lists what keeps network namespace ino alive that /proc
// shows in processes pids: threads inside it and open descriptors of it.
// (A socket created in it also holds it; the tests create none that
// outlive their child.) Only the processes that can hold it are looked
// at: a namespace's inode number is free for the next namespace made
// once it is gone, and the parallel tests make many, so a scan of every
// process would find a newer namespace of another test under the old
// number.
func netnsHolders(ino uint64, pids ...int) []string {
	want := fmt.Sprintf("net:[%d]", ino)
	var holders []string
	for _, pid := range pids {
		p := "/proc/" + strconv.Itoa(pid)
		links, _ := filepath.Glob(p + "/task/*/ns/net")
		fds, _ := filepath.Glob(p + "/fd/*")
		for _, l := range append(links, fds...) {
			if target, err := os.Readlink(l); err == nil && target == want {
				holders = append(holders, l)
			}
		}
	}
	return holders
}
