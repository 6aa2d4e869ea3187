package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	coreclient "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/podgate/podgate/internal/k8sbin"
	"github.com/podgate/podgate/kube/controlplane"
	"github.com/podgate/podgate/test/syncbuf"
)

func TestRenewAtIsTheKubeletsTokenSchedule(t *testing.T) {
	t.Parallel()
	issued := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		exp     time.Time
		seconds int64
		want    time.Time
	}{
		{"an hour's token: at 80% of it", issued.Add(time.Hour), 3600, issued.Add(48 * time.Minute)},
		{"the admission plugin's 3607 s, extended to a year: as the one asked for", issued.Add(365 * 24 * time.Hour), 3607, issued.Add(2885600 * time.Millisecond)},
		{"a two-day token: after a day at the latest", issued.Add(48 * time.Hour), 172800, issued.Add(24 * time.Hour)},
		{"ten minutes: after eight", issued.Add(10 * time.Minute), 600, issued.Add(8 * time.Minute)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := renewAt(issued, tt.exp, tt.seconds); !got.Equal(tt.want) {
				t.Errorf("renewAt = %s, want %s", got.Sub(issued), tt.want.Sub(issued))
			}
		})
	}
}

// whoamiPod runs kubectl auth whoami with the pod's $KUBECONFIG, prints
// the environment the node gave it, and stays.
func whoamiPod(name, node string, automount *bool) *corev1.Pod {
	kubectl, _ := k8sbin.Path(k8sbin.Kubectl)
	script := fmt.Sprintf(`echo "env KUBECONFIG=${KUBECONFIG:-none} HOST=$KUBERNETES_SERVICE_HOST PORT=$KUBERNETES_SERVICE_PORT"
if [ -n "$KUBECONFIG" ]; then echo "whoami $(%s auth whoami -o json | tr -d '\n ')"; fi
exec sleep 600`, kubectl)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			AutomountServiceAccountToken:  automount,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{
				Name: "c", Image: "busybox", Command: []string{"/bin/sh", "-c", script},
			}},
		},
	}
}

// outputLine waits for the line of pod's output that starts with prefix
// and returns the rest of it.
func outputLine(t *testing.T, out *syncbuf.Buffer, pod, prefix string) string {
	t.Helper()
	var got string
	eventually(t, time.Minute, "pod "+pod+" printing "+prefix, func() (bool, string) {
		for _, line := range strings.Split(out.String(), "\n") {
			if rest, ok := strings.CutPrefix(line, pod+"/c | "+prefix); ok {
				got = rest
				return true, ""
			}
		}
		return false, "not yet"
	})
	return got
}

func TestPodsReachTheAPIServerAsTheirServiceAccount(t *testing.T) {
	cp, err := controlplane.Start(t.Context(), controlplane.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	})
	admin := cp.AdminConfig()
	core := coreclient.NewForConfigOrDie(admin)
	kubeconfig, err := cp.NodeKubeconfig("sa-node")
	if err != nil {
		t.Fatal(err)
	}
	podsDir := t.TempDir()
	var out, log syncbuf.Buffer
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		done <- Run(ctx, Config{
			Kubeconfig: kubeconfig, NodeName: "sa-node", PodCIDR: "127.3.3.0/24", PodsDir: podsDir,
			Output: &out, Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})),
			Ready: func() { close(ready) },
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		if t.Failed() {
			t.Logf("node log:\n%s\noutput:\n%s", log.String(), out.String())
		}
	})
	<-ready
	host := strings.TrimPrefix(cp.URL(), "https://")

	t.Run("a pod's kubectl is its service account, bound to the pod", func(t *testing.T) {
		pod, err := core.Pods("default").Create(t.Context(), whoamiPod("who", "sa-node", nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(podsDir, string(pod.UID), "serviceaccount")
		wantEnv := fmt.Sprintf("KUBECONFIG=%s HOST=%s PORT=%s", filepath.Join(dir, "kubeconfig"),
			strings.Split(host, ":")[0], strings.Split(host, ":")[1])
		if got := outputLine(t, &out, "who", "env "); got != wantEnv {
			t.Errorf("env: %s, want %s", got, wantEnv)
		}
		var review authenticationv1.SelfSubjectReview
		if err := json.Unmarshal([]byte(outputLine(t, &out, "who", "whoami ")), &review); err != nil {
			t.Fatalf("kubectl auth whoami: %v", err)
		}
		u := review.Status.UserInfo
		if u.Username != "system:serviceaccount:default:default" {
			t.Errorf("username %q, want system:serviceaccount:default:default", u.Username)
		}
		if got := u.Extra["authentication.kubernetes.io/pod-name"]; len(got) != 1 || got[0] != "who" {
			t.Errorf("extra pod-name %v, want [who]", got)
		}
		if got := u.Extra["authentication.kubernetes.io/pod-uid"]; len(got) != 1 || got[0] != string(pod.UID) {
			t.Errorf("extra pod-uid %v, want [%s]", got, pod.UID)
		}
		for name, want := range map[string]string{"namespace": "default"} {
			if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
				t.Errorf("%s: %q %v, want %q", name, b, err, want)
			}
		}
		if ca, err := os.ReadFile(filepath.Join(dir, "ca.crt")); err != nil || !bytes.Contains(ca, []byte("BEGIN CERTIFICATE")) {
			t.Errorf("ca.crt: %v %q", err, ca)
		}
		// A container that runs as another user (runAsUser) reads them,
		// as it reads a kubelet's projected token (mode 0644); nobody lists
		// the pods directory, and the pod's own is listable, as the volume
		// it is on a pod network.
		if fi, err := os.Stat(podsDir); err != nil || fi.Mode().Perm() != 0o711 {
			t.Errorf("the pods directory: %v %v, want mode 0711", fi, err)
		}
		if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o755 {
			t.Errorf("the pod's directory: %v %v, want mode 0755", fi, err)
		}
		for _, name := range []string{"token", "ca.crt", "namespace", "kubeconfig"} {
			if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Mode().Perm() != 0o644 {
				t.Errorf("%s: %v %v, want mode 0644", name, fi, err)
			}
		}

		t.Run("the token is renewed at 80% of its life", func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Now())
			nodeRC, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				t.Fatal(err)
			}
			c := &credentials{core: coreclient.NewForConfigOrDie(nodeRC), dir: t.TempDir(), server: host,
				clock: clk, log: slog.New(slog.DiscardHandler)}
			extras := c.setup(pod)
			if err := extras.Prepare(t.Context()); err != nil {
				t.Fatal(err)
			}
			tokenFile := filepath.Join(c.dir, string(pod.UID), "serviceaccount", "token")
			first, err := os.ReadFile(tokenFile)
			if err != nil {
				t.Fatal(err)
			}
			// The admission plugin's 3607 s: renewed after 2885.6 s.
			eventually(t, 10*time.Second, "the renewal timer set", func() (bool, string) { return clk.HasWaiters(), "" })
			clk.Step(2880 * time.Second) // not due yet: the fake clock fires nothing
			if b, _ := os.ReadFile(tokenFile); !bytes.Equal(b, first) {
				t.Fatal("the token was renewed before 80% of its life")
			}
			clk.Step(6 * time.Second)
			eventually(t, 30*time.Second, "a new token", func() (bool, string) {
				b, _ := os.ReadFile(tokenFile)
				return len(b) > 0 && !bytes.Equal(b, first), "still the first"
			})
			extras.Release()
			if _, err := os.Stat(filepath.Dir(tokenFile)); !os.IsNotExist(err) {
				t.Errorf("after Release the directory is still there: %v", err)
			}
		})

		token, err := os.ReadFile(filepath.Join(dir, "token"))
		if err != nil {
			t.Fatal(err)
		}
		if err := core.Pods("default").Delete(t.Context(), "who", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, time.Minute, "the pod's directory removed", func() (bool, string) {
			_, err := os.Stat(filepath.Dir(dir))
			return os.IsNotExist(err), fmt.Sprint(err)
		})
		// Bound to the pod: once it is gone, the API server refuses it.
		reviews := authclient.NewForConfigOrDie(admin).TokenReviews()
		eventually(t, time.Minute, "the token refused", func() (bool, string) {
			r, err := reviews.Create(t.Context(), &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: string(token)}}, metav1.CreateOptions{})
			if err != nil {
				return false, err.Error()
			}
			return !r.Status.Authenticated, fmt.Sprintf("authenticated as %s", r.Status.User.Username)
		})
	})

	t.Run("automountServiceAccountToken false gets no token", func(t *testing.T) {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "quiet", Namespace: "default"}, AutomountServiceAccountToken: ptr.To(false)}
		if _, err := core.ServiceAccounts("default").Create(t.Context(), sa, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		onSA := whoamiPod("no-sa-token", "sa-node", nil)
		onSA.Spec.ServiceAccountName = "quiet"
		for _, pod := range []*corev1.Pod{whoamiPod("no-token", "sa-node", ptr.To(false)), onSA} {
			if _, err := core.Pods("default").Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("KUBECONFIG=none HOST=%s PORT=%s", strings.Split(host, ":")[0], strings.Split(host, ":")[1])
			if got := outputLine(t, &out, pod.Name, "env "); got != want {
				t.Errorf("%s: env %s, want %s", pod.Name, got, want)
			}
		}
	})
}
