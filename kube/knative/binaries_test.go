package knative

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/podgate/podgate/internal/k8sbin"
	"github.com/podgate/podgate/kube/controlplane"
	"github.com/podgate/podgate/test/freeport"
)

// envBin names hack/knative-build.sh's bin directory for the tests that
// run the stack's real binaries on this machine (internal/knativebin's
// variable): the manifests' configuration as the programs themselves
// read it.
const envBin = "PODGATE_KNATIVE_BIN"

// stackBinary is the real binary name of the bin directory envBin names;
// the test is skipped, saying so, without one.
func stackBinary(t *testing.T, name string) string {
	t.Helper()
	dir := os.Getenv(envBin)
	if dir == "" {
		t.Skipf("%s is not set: not run against the real %s (hack/knative-build.sh prints the directory)", envBin, name)
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no %s in %s=%s: %v", name, envBin, dir, err)
	}
	return p
}

// kube-proxy reads the config.conf the network Step generates strictly
// (it falls back to lenient decoding, and says so, on an unknown field)
// and validates it.
func TestKubeProxyAcceptsItsConfiguration(t *testing.T) {
	bin := stackBinary(t, BinKubeProxy)
	for _, mode := range []ProxyMode{ProxyNFTables, ProxyIPTables} {
		t.Run(string(mode), func(t *testing.T) {
			opts := testOptions(t)
			opts.ProxyMode = mode
			steps := writeSteps(t, opts)
			out := filepath.Join(t.TempDir(), "written.yaml")
			cmd := exec.CommandContext(t.Context(), bin, "--config="+filepath.Join(steps[StepNetwork].Dir, "config.conf"),
				"--write-config-to="+out, "--hostname-override=node")
			said, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("kube-proxy: %v\n%s", err, said)
			}
			if bytes.Contains(said, []byte("lenient")) || bytes.Contains(said, []byte("strict decoding error")) {
				t.Errorf("kube-proxy did not read config.conf strictly:\n%s", said)
			}
			written, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"mode: " + string(mode), "clusterCIDR: " + opts.PodCIDR, "maxPerCore: 0"} {
				if !bytes.Contains(written, []byte(want)) {
					t.Errorf("kube-proxy's configuration lacks %q:\n%s", want, written)
				}
			}
		})
	}
}

// CoreDNS with the Corefile the network Step generates, against a real
// API server: cluster names answered, names outside the cluster refused
// (no forwarding). The Corefile is the Step's, but for loopback addresses
// and free ports and the API server's kubeconfig (in a pod, the service
// account's).
func TestCoreDNSAnswersClusterNamesAndRefusesTheRest(t *testing.T) {
	bin := stackBinary(t, BinCoreDNS)
	kubectl, err := k8sbin.Path(k8sbin.Kubectl)
	if err != nil {
		t.Fatal(err)
	}
	cp := startControlPlane(t)
	opts := testOptions(t)
	opts.ServiceCIDR = controlplane.DefaultServiceCIDR
	steps := writeSteps(t, opts)
	k := Kubectl{Path: kubectl, Kubeconfig: cp.AdminKubeconfig()}
	if err := k.Apply(t.Context(), steps[StepNetwork]); err != nil {
		t.Fatal(err)
	}

	corefile, err := os.ReadFile(filepath.Join(steps[StepNetwork].Dir, "Corefile"))
	if err != nil {
		t.Fatal(err)
	}
	dnsPort, healthPort, readyPort := freeUDPAndTCPPort(t), freePort(t), freePort(t)
	local := strings.NewReplacer(
		":1053", fmt.Sprintf(":%d", dnsPort),
		"health :8080", fmt.Sprintf("health 127.0.0.1:%d", healthPort),
		"ready :8181", fmt.Sprintf("ready 127.0.0.1:%d", readyPort),
		"    errors\n", "    errors\n    bind 127.0.0.1\n",
		"kubernetes cluster.local in-addr.arpa ip6.arpa {\n", "kubernetes cluster.local in-addr.arpa ip6.arpa {\n        kubeconfig "+cp.AdminKubeconfig()+"\n",
	).Replace(string(corefile))
	conf := filepath.Join(t.TempDir(), "Corefile")
	if err := os.WriteFile(conf, []byte(local), 0o644); err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	cmd := exec.Command(bin, "-conf", conf)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	waitHTTP200(t, fmt.Sprintf("http://127.0.0.1:%d/ready", readyPort), &log)

	server := fmt.Sprintf("127.0.0.1:%d", dnsPort)
	// Ready (its plugins are) can come before the DNS listeners are
	// up: wait until one answers.
	for deadline := time.Now().Add(time.Minute); ; {
		if _, _, err := query(t.Context(), server, "kubernetes.default.svc.cluster.local.", dnsmessage.TypeA); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("CoreDNS does not answer on %s within a minute: %v\n%s", server, err, log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, tc := range []struct {
		name  string
		qtype dnsmessage.Type
		rcode dnsmessage.RCode
		want  string
	}{
		{"kube-dns.kube-system.svc.cluster.local.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, "10.96.0.10"},
		{"kubernetes.default.svc.cluster.local.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, "10.96.0.1"},
		{"10.0.96.10.in-addr.arpa.", dnsmessage.TypePTR, dnsmessage.RCodeSuccess, "kube-dns.kube-system.svc.cluster.local."},
		{"nothere.default.svc.cluster.local.", dnsmessage.TypeA, dnsmessage.RCodeNameError, ""},
		// Not the cluster's: refused, nothing forwarded.
		{"example.com.", dnsmessage.TypeA, dnsmessage.RCodeRefused, ""},
		{"podgate.local.", dnsmessage.TypeA, dnsmessage.RCodeRefused, ""},
	} {
		rcode, answers, err := query(t.Context(), server, tc.name, tc.qtype)
		if err != nil {
			t.Errorf("%s: %v\nCoreDNS said:\n%s\nCorefile:\n%s", tc.name, err, log.String(), local)
			continue
		}
		if rcode != tc.rcode || (tc.want != "" && !(len(answers) == 1 && answers[0] == tc.want)) {
			t.Errorf("%s %s: %s %q, want %s %q\nCoreDNS said:\n%s", tc.qtype, tc.name, rcode, answers, tc.rcode, tc.want, log.String())
		}
	}
}

func startControlPlane(t *testing.T) *controlplane.ControlPlane {
	t.Helper()
	cp, err := controlplane.Start(t.Context(), controlplane.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	})
	return cp
}

// freePort is a loopback TCP port nobody listens on right now.
func freePort(t *testing.T) int { return freeport.Port(t, "") }

// freeUDPAndTCPPort is a loopback port free for both (DNS serves both).
func freeUDPAndTCPPort(t *testing.T) int { return freeport.TCPAndUDP(t, "") }

// waitHTTP200 polls url until it answers 200, for a minute.
func waitHTTP200(t *testing.T, url string, log fmt.Stringer) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not 200 within a minute (%v)\n%s", url, err, log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// query asks server (UDP) for name of type qtype and returns the answer's
// rcode and its A addresses or PTR names.
func query(ctx context.Context, server, name string, qtype dnsmessage.Type) (dnsmessage.RCode, []string, error) {
	q := dnsmessage.Message{
		Header:    dnsmessage.Header{ID: 4711, RecursionDesired: true},
		Questions: []dnsmessage.Question{{Name: dnsmessage.MustNewName(name), Type: qtype, Class: dnsmessage.ClassINET}},
	}
	packed, err := q.Pack()
	if err != nil {
		return 0, nil, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "udp", server)
	if err != nil {
		return 0, nil, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return 0, nil, err
	}
	if _, err := conn.Write(packed); err != nil {
		return 0, nil, err
	}
	buf := make([]byte, 4096)
	n, err := conn.Read(buf)
	if err != nil {
		return 0, nil, err
	}
	var m dnsmessage.Message
	if err := m.Unpack(buf[:n]); err != nil {
		return 0, nil, err
	}
	if m.ID != q.ID {
		return 0, nil, errors.New("answer to another query")
	}
	var answers []string
	for _, a := range m.Answers {
		switch r := a.Body.(type) {
		case *dnsmessage.AResource:
			answers = append(answers, net.IP(r.A[:]).String())
		case *dnsmessage.PTRResource:
			answers = append(answers, r.PTR.String())
		}
	}
	return m.RCode, answers, nil
}

// syncBuffer is a buffer a process's output goroutine writes while the
// test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
