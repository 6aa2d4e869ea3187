//go:build linux

package nodenet_test

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	goruntime "runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/podgate/podgate/internal/leftovers"
	"github.com/podgate/podgate/node/proc"
	"github.com/podgate/podgate/test/testapp"
)

// The tests never change the test process's own network namespace: each
// re-runs this binary in a new one (netns.StartInNewNetns), with
// childEnv naming the role it plays there: a node with its pod network,
// agent and local control plane. The same binary plays the containers'
// programs: "testapp" (the default image resolution runs os.Executable()
// with it, as podgate runs its own subcommand) and "netcheck".
const (
	childEnv = "NODENET_TEST_CHILD"
	cidrEnv  = "NODENET_TEST_CIDR"
	dirEnv   = "NODENET_TEST_DIR"
)

// init keeps the main goroutine on the main thread, so no pod-namespace
// work runs there: Go parks rather than ends a main thread left in a
// pod's namespace, and /proc/self/ns/net (the main thread's) would name
// that namespace from then on.
func init() { goruntime.LockOSThread() }

func TestMain(m *testing.M) {
	// Before anything else: the guardian of the Supervisors these tests
	// start is this test binary, re-executed.
	proc.RunReaperIfAsked()
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "testapp":
			os.Exit(testapp.Main(os.Args[2:]))
		case "netcheck":
			os.Exit(runNetcheck(os.Args[2:]))
		case "dnscheck":
			os.Exit(runDNSCheck(os.Args[2:]))
		case "volcheck":
			os.Exit(runVolCheck(os.Args[2:]))
		}
	}
	if role := os.Getenv(childEnv); role != "" {
		fn, ok := roles[role]
		if !ok {
			fmt.Fprintf(os.Stderr, "unknown %s=%q\n", childEnv, role)
			os.Exit(2)
		}
		if err := fn(os.Getenv(cidrEnv), os.Getenv(dirEnv)); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", role, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(leftovers.Isolate()))
}

// runNetcheck checks, from where it runs, that it is inside a pod's
// network: eth0 is there (the cluster namespace has none) and $POD_IP is
// an address of this namespace (it can be bound). It appends "PID
// net:[INODE]" to -record. With -require it also fails when that file is
// missing (an exec probe's switch), with -get when the URL does not
// answer 200. Arguments after the flags are a command it then becomes
// (exec), with this binary as argv[0]: a container's program.
func runNetcheck(args []string) int {
	fs := flag.NewFlagSet("netcheck", flag.ContinueOnError)
	record := fs.String("record", "", "append PID and network namespace here")
	require := fs.String("require", "", "fail unless this file exists")
	get := fs.String("get", "", "fail unless this URL answers 200")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := netcheck(*record, *require, *get); err != nil {
		fmt.Fprintln(os.Stderr, "netcheck:", err)
		return 1
	}
	if rest := fs.Args(); len(rest) > 0 {
		self, err := os.Executable()
		if err == nil {
			err = syscall.Exec(self, append([]string{self}, rest...), os.Environ())
		}
		fmt.Fprintln(os.Stderr, "netcheck: exec:", err)
		return 1
	}
	return 0
}

func netcheck(record, require, get string) error {
	ns, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		return err
	}
	if record != "" {
		f, err := os.OpenFile(record, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		_, werr := fmt.Fprintf(f, "%d %s\n", os.Getpid(), ns)
		if err := errors.Join(werr, f.Close()); err != nil {
			return err
		}
	}
	if _, err := net.InterfaceByName("eth0"); err != nil {
		return fmt.Errorf("not in a pod's network (%s): %w", ns, err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(os.Getenv("POD_IP"), "0"))
	if err != nil {
		return fmt.Errorf("$POD_IP %q is not an address of %s: %w", os.Getenv("POD_IP"), ns, err)
	}
	_ = ln.Close()
	if require != "" {
		if _, err := os.Stat(require); err != nil {
			return err
		}
	}
	if get != "" {
		code, _, err := httpGet(get)
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("GET %s: %d", get, code)
		}
		return err
	}
	return nil
}

// httpGet is one GET without keep-alive (no connection outlives it).
func httpGet(url string) (int, string, error) {
	tr := &http.Transport{DisableKeepAlives: true, Proxy: nil}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// alive reports whether pid runs (a zombie does not: its namespaces are
// released).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == ')' {
			return i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
		}
	}
	return false
}
