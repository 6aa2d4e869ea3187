package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreclient "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/podgate/podgate/kube/controlplane"
	"github.com/podgate/podgate/test/syncbuf"
)

func TestWebhookUsageAndStartErrors(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"webhook", "extra"}, exitUsage, "unknown command"},
		{[]string{"webhook", "--nope"}, exitUsage, "unknown flag: --nope"},
		{[]string{"webhook", "--cert-lifetime", "0s"}, exitUsage, "--cert-lifetime 0s: must be positive"},
		{[]string{"webhook", "--log-format", "xml"}, exitUsage, `invalid --log-format "xml"`},
		{[]string{"webhook", "--namespace", "My_NS"}, exitUsage, `--namespace "My_NS": a lowercase RFC 1123 label`},
		{[]string{"webhook", "--service", ""}, exitUsage, "--service must not be empty"},
		{[]string{"webhook", "--secret", "Certs!"}, exitUsage, `--secret "Certs!": a lowercase RFC 1123 subdomain`},
		{[]string{"webhook", "--mutating-configuration", "a b"}, exitUsage, `--mutating-configuration "a b"`},
		{[]string{"webhook", "--listen", "127.0.0.1"}, exitUsage, `--listen "127.0.0.1": want HOST:PORT`},
		{[]string{"webhook", "--listen", ":https"}, exitUsage, `port "https" must be a number`},
		{[]string{"webhook", "--cert-host", "not a host"}, exitUsage, `--cert-host "not a host": neither an IP address nor a DNS name`},
		{[]string{"webhook", "--cert-lifetime", "48h", "--ca-lifetime", "24h"}, exitUsage, "--cert-lifetime 48h0m0s is longer than --ca-lifetime 24h0m0s"},
		{[]string{"webhook", "--gate-image", ""}, exitUsage, "--gate-image must not be empty"},
		{[]string{"webhook", "--only-router", "kube-proxy"}, exitUsage, `--only-router "kube-proxy": the one router podgate knows is "activator"`},
		{[]string{"webhook", "--knative-handoff-url", "activator:80"}, exitUsage, `--knative-handoff-url "activator:80": want an http:// or https:// URL, or - for none`},
		{[]string{"webhook", "--kubeconfig", filepath.Join(t.TempDir(), "absent")}, exitInvalid, "absent: no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tt.args, &stdout, &stderr); code != tt.code {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tt.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr does not say %q:\n%s", tt.want, stderr.String())
			}
		})
	}
}

var webhookServing = regexp.MustCompile(`msg="webhook serving" addr=(\S+)`)

// TestWebhookBinaryServesAndStopsOnSigterm runs the real `podgate
// webhook` against a real control plane with an admin kubeconfig: it makes
// its Secret (an admin may create it), serves TLS with a certificate for
// the Service name, waits for webhook configurations that do not exist
// yet without failing, and exits 0 on SIGTERM.
func TestWebhookBinaryServesAndStopsOnSigterm(t *testing.T) {
	bin := podgateBinary(t)
	cp, err := controlplane.Start(t.Context(), controlplane.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	})
	core := coreclient.NewForConfigOrDie(cp.AdminConfig())
	if _, err := core.Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "pg"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(bin, "webhook", "--kubeconfig", cp.AdminKubeconfig(), "--listen", "127.0.0.1:0",
		"--namespace", "pg", "--service", "hook", "--cert-host", "127.0.0.1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var logs syncbuf.Buffer
	addrs, exited := make(chan string, 1), make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			_, _ = io.WriteString(&logs, sc.Text()+"\n")
			if m := webhookServing.FindStringSubmatch(sc.Text()); m != nil {
				addrs <- m[1]
			}
		}
		exited <- cmd.Wait()
	}()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("podgate webhook stderr:\n%s", logs.String())
		}
	}()
	var addr string
	select {
	case addr = <-addrs:
	case err := <-exited:
		t.Fatalf("podgate webhook exited before serving: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("podgate webhook did not report its address")
	}

	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("https://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz: %s %q", resp.Status, body)
	}
	if names := resp.TLS.PeerCertificates[0].DNSNames; len(names) == 0 || names[0] != "hook.pg.svc" {
		t.Errorf("certificate for %v, want hook.pg.svc", names)
	}
	secret, err := core.Secrets("pg").Get(t.Context(), "podgate-webhook-certs", metav1.GetOptions{})
	if err != nil || len(secret.Data["tls.crt"]) == 0 || len(secret.Data["ca-bundle.crt"]) == 0 {
		t.Errorf("the Secret: %v, keys %d", err, len(secret.Data))
	}
	if !strings.Contains(logs.String(), "MutatingWebhookConfiguration podgate-webhook: webhook configuration not found") {
		t.Errorf("the missing configurations are not reported:\n%s", logs.String())
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("podgate webhook exited with %v after SIGTERM", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("podgate webhook did not exit on SIGTERM")
	}
}
