package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"

	"github.com/podgate/podgate/node"
	"github.com/podgate/podgate/node/env"
)

// Variables every container gets, as the kubelet sets them for the
// `kubernetes` Service; KUBECONFIG only for a pod with a token.
const (
	EnvServiceHost = "KUBERNETES_SERVICE_HOST"
	EnvServicePort = "KUBERNETES_SERVICE_PORT"
	EnvKubeconfig  = "KUBECONFIG"
)

// Files of a pod's credential directory.
const (
	fileToken      = "token"
	fileCA         = "ca.crt"
	fileNamespace  = "namespace"
	fileKubeconfig = "kubeconfig"
)

// The kubelet's token manager: a token is renewed once 80% of its
// lifetime has passed, or after a day whatever its lifetime (a token the
// API server extended to a year, for one asked for 3607 s, too).
const (
	tokenRefreshFraction = 0.8
	tokenMaxAge          = 24 * time.Hour
	// tokenRetryEvery is how soon a failed renewal is tried again; the
	// token in place stays valid meanwhile.
	tokenRetryEvery = 10 * time.Second
	// defaultTokenSeconds is a projected token's default lifetime.
	defaultTokenSeconds = 3600
)

// authorizerLag bounds the retries of a request refused because the Node
// authorizer has not yet seen the pod bound to this node: its graph is
// fed by an informer of its own, which may be behind the pod watch that
// told the node of the pod (a real race, seen within tens of
// milliseconds). Longer refusals go back to the agent, which records
// FailedMount and tries again later.
var authorizerLag = wait.Backoff{Duration: 50 * time.Millisecond, Factor: 1.5, Steps: 12, Cap: 2 * time.Second}

// credentials gives each pod the identity of its service account, as the
// kubelet does with the kube-api-access volume the ServiceAccount
// admission plugin adds to every pod that does not opt out: a bound
// token, the cluster's CA and the namespace, in a directory of the pod's,
// with a kubeconfig that reads them.
type credentials struct {
	core   corev1client.CoreV1Interface
	dir    string // one subdirectory per pod UID
	server string // host:port of the API server, as pods reach it
	caData []byte // the node's CA, for a volume that projects none
	clock  clock.Clock
	log    *slog.Logger
}

// setup is the node.PodSetupFunc: the `kubernetes` Service variables
// for every pod, and for a pod with a service-account token volume its
// credential directory ($KUBECONFIG), filled before its containers start
// and renewed while it runs.
func (c *credentials) setup(pod *corev1.Pod) node.PodExtras {
	host, port, _ := net.SplitHostPort(c.server)
	extras := node.PodExtras{Env: []env.Var{
		{Name: EnvServiceHost, Value: host},
		{Name: EnvServicePort, Value: port},
		{Name: EnvServicePort + "_HTTPS", Value: port},
	}}
	name, vol := tokenVolume(pod)
	if vol == nil {
		// automountServiceAccountToken: false, on the pod or its service
		// account: the admission plugin added no volume, so no token.
		return extras
	}
	// In the pod's directory, beside what the node keeps there (its DNS
	// files and volumes): the kubelet's pods/UID/volumes/….
	pc := &podCredentials{c: c, pod: pod, vol: vol, dir: filepath.Join(c.dir, string(pod.UID), "serviceaccount")}
	extras.Env = append(extras.Env, env.Var{Name: EnvKubeconfig, Value: filepath.Join(pc.dir, fileKubeconfig)})
	extras.Prepare = pc.prepare
	extras.Release = pc.release
	// Where the node mounts volumes (a pod network, the node root), the
	// directory is the volume: the files at the container's mount path
	// (/var/run/secrets/kubernetes.io/serviceaccount), where client-go's
	// in-cluster configuration reads them.
	extras.Volumes = map[string]string{name: pc.dir}
	return extras
}

// tokenVolume is the pod's projected volume with a service-account token
// for the API server (no audience of its own): the one the ServiceAccount
// admission plugin adds (kube-api-access-XXXXX), or one the pod declares
// the same way.
func tokenVolume(pod *corev1.Pod) (string, *corev1.ProjectedVolumeSource) {
	for i := range pod.Spec.Volumes {
		p := pod.Spec.Volumes[i].Projected
		if p == nil {
			continue
		}
		for _, s := range p.Sources {
			if s.ServiceAccountToken != nil && s.ServiceAccountToken.Audience == "" {
				return pod.Spec.Volumes[i].Name, p
			}
		}
	}
	return "", nil
}

// podCredentials is one pod's credential directory and its renewals.
type podCredentials struct {
	c   *credentials
	pod *corev1.Pod
	vol *corev1.ProjectedVolumeSource
	dir string

	mu      sync.Mutex
	stop    context.CancelFunc
	renewed chan struct{} // closed when the renewal loop ended
}

// prepare writes the directory — the token, what else the volume projects
// (ca.crt from the kube-root-ca.crt ConfigMap, the namespace) and the
// kubeconfig — and starts the renewals.
func (pc *podCredentials) prepare(ctx context.Context) error {
	// As a kubelet projects a service-account token (mode 0644, its
	// default), readable by the container's user whoever that is; the
	// directory is named by the pod's UID in one that is searchable, not
	// listable, and listable itself, as the volume is in a container.
	if err := os.MkdirAll(pc.dir, 0o755); err != nil {
		return fmt.Errorf("service-account credentials: %w", err)
	}
	if err := os.Chmod(pc.dir, 0o755); err != nil {
		return fmt.Errorf("service-account credentials: %w", err)
	}
	next, err := pc.project(ctx)
	if err != nil {
		return err
	}
	if err := pc.writeKubeconfig(); err != nil {
		return err
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.stop != nil {
		return nil // prepared before (a retry after a late failure)
	}
	rctx, stop := context.WithCancel(context.Background())
	pc.stop, pc.renewed = stop, make(chan struct{})
	go pc.renew(rctx, next)
	return nil
}

// project writes every source of the volume and returns when the token
// is due for renewal.
func (pc *podCredentials) project(ctx context.Context) (time.Time, error) {
	var next time.Time
	for _, s := range pc.vol.Sources {
		var err error
		switch {
		case s.ServiceAccountToken != nil:
			next, err = pc.writeToken(ctx, s.ServiceAccountToken)
		case s.ConfigMap != nil:
			err = pc.writeConfigMap(ctx, s.ConfigMap)
		case s.DownwardAPI != nil:
			err = pc.writeDownward(s.DownwardAPI)
		}
		if err != nil {
			return time.Time{}, err
		}
	}
	if _, err := os.Stat(filepath.Join(pc.dir, fileCA)); errors.Is(err, os.ErrNotExist) && len(pc.c.caData) > 0 {
		// A volume of the pod's own without the CA: the node's.
		if err := writeAtomic(filepath.Join(pc.dir, fileCA), pc.c.caData); err != nil {
			return time.Time{}, fmt.Errorf("service-account credentials: %w", err)
		}
	}
	return next, nil
}

// writeToken asks for a token of the pod's service account bound to the
// pod (it stops working when the pod is deleted) and writes it.
func (pc *podCredentials) writeToken(ctx context.Context, src *corev1.ServiceAccountTokenProjection) (time.Time, error) {
	seconds := int64(defaultTokenSeconds)
	if src.ExpirationSeconds != nil {
		seconds = *src.ExpirationSeconds
	}
	sa := pc.pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &seconds, // no audience: the API server's own
		BoundObjectRef: &authenticationv1.BoundObjectReference{
			Kind: "Pod", APIVersion: "v1", Name: pc.pod.Name, UID: pc.pod.UID,
		},
	}}
	var tr *authenticationv1.TokenRequest
	err := untilAuthorized(ctx, func(ctx context.Context) error {
		var err error
		tr, err = pc.c.core.ServiceAccounts(pc.pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("service-account token of %s/%s for pod %s: %w", pc.pod.Namespace, sa, pc.pod.Name, err)
	}
	issued := pc.c.clock.Now()
	if err := writeAtomic(filepath.Join(pc.dir, projectedPath(src.Path, fileToken)), []byte(tr.Status.Token)); err != nil {
		return time.Time{}, fmt.Errorf("service-account token: %w", err)
	}
	return renewAt(issued, tr.Status.ExpirationTimestamp.Time, seconds), nil
}

// renewAt is when a token issued at issued, expiring at exp, asked for
// with a lifetime of seconds, is renewed: at 80% of its lifetime, and at
// the latest a day after it was issued.
func renewAt(issued, exp time.Time, seconds int64) time.Time {
	ttl := exp.Sub(issued)
	if asked := time.Duration(seconds) * time.Second; asked > 0 && asked < ttl {
		// An extended token (a year, for 3607 s) is renewed as the one
		// asked for.
		ttl = asked
	}
	at := issued.Add(time.Duration(float64(ttl) * tokenRefreshFraction))
	if latest := issued.Add(tokenMaxAge); at.After(latest) {
		at = latest
	}
	return at
}

func (pc *podCredentials) writeConfigMap(ctx context.Context, src *corev1.ConfigMapProjection) error {
	var cm *corev1.ConfigMap
	err := untilAuthorized(ctx, func(ctx context.Context) error {
		var err error
		cm, err = pc.c.core.ConfigMaps(pc.pod.Namespace).Get(ctx, src.Name, metav1.GetOptions{})
		return err
	})
	if err != nil {
		if apierrors.IsNotFound(err) && src.Optional != nil && *src.Optional {
			return nil
		}
		return fmt.Errorf("configmap %s/%s for pod %s: %w", pc.pod.Namespace, src.Name, pc.pod.Name, err)
	}
	items := src.Items
	if len(items) == 0 {
		for k := range cm.Data {
			items = append(items, corev1.KeyToPath{Key: k, Path: k})
		}
	}
	for _, it := range items {
		v, ok := cm.Data[it.Key]
		if !ok {
			return fmt.Errorf("configmap %s/%s for pod %s: no key %q", pc.pod.Namespace, src.Name, pc.pod.Name, it.Key)
		}
		if err := writeAtomic(filepath.Join(pc.dir, projectedPath(it.Path, it.Key)), []byte(v)); err != nil {
			return fmt.Errorf("configmap %s/%s: %w", pc.pod.Namespace, src.Name, err)
		}
	}
	return nil
}

// writeDownward writes the pod's own fields a downward API source names
// (the volume the admission plugin adds names metadata.namespace).
func (pc *podCredentials) writeDownward(src *corev1.DownwardAPIProjection) error {
	for _, it := range src.Items {
		if it.FieldRef == nil {
			continue // resource fields: not in a token volume
		}
		var v string
		switch it.FieldRef.FieldPath {
		case "metadata.namespace":
			v = pc.pod.Namespace
		case "metadata.name":
			v = pc.pod.Name
		case "metadata.uid":
			v = string(pc.pod.UID)
		default:
			continue
		}
		if err := writeAtomic(filepath.Join(pc.dir, projectedPath(it.Path, fileNamespace)), []byte(v)); err != nil {
			return fmt.Errorf("service-account credentials: %w", err)
		}
	}
	return nil
}

// writeKubeconfig writes a kubeconfig that reads the token and the CA
// from the directory: client-go reads a tokenFile again as it ages, so
// renewed tokens are picked up without a restart.
func (pc *podCredentials) writeKubeconfig() error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["podgate"] = &clientcmdapi.Cluster{
		Server:               "https://" + pc.c.server,
		CertificateAuthority: filepath.Join(pc.dir, fileCA),
	}
	cfg.AuthInfos["serviceaccount"] = &clientcmdapi.AuthInfo{TokenFile: filepath.Join(pc.dir, fileToken)}
	cfg.Contexts["podgate"] = &clientcmdapi.Context{Cluster: "podgate", AuthInfo: "serviceaccount", Namespace: pc.pod.Namespace}
	cfg.CurrentContext = "podgate"
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("service-account kubeconfig: %w", err)
	}
	if err := writeAtomic(filepath.Join(pc.dir, fileKubeconfig), b); err != nil {
		return fmt.Errorf("service-account kubeconfig: %w", err)
	}
	return nil
}

// renew writes a new token when the last one is due, until ctx ends.
func (pc *podCredentials) renew(ctx context.Context, next time.Time) {
	defer close(pc.renewed)
	for {
		t := pc.c.clock.NewTimer(next.Sub(pc.c.clock.Now()))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		var err error
		for _, s := range pc.vol.Sources {
			if s.ServiceAccountToken != nil {
				next, err = pc.writeToken(ctx, s.ServiceAccountToken)
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			pc.c.log.Warn("renew a pod's service-account token; the current one stays until then", "pod", pc.pod.Namespace+"/"+pc.pod.Name, "retry", tokenRetryEvery, "err", err)
			next = pc.c.clock.Now().Add(tokenRetryEvery)
			continue
		}
		pc.c.log.Debug("renewed a pod's service-account token", "pod", pc.pod.Namespace+"/"+pc.pod.Name, "next", next)
	}
}

// release stops the renewals and removes the directory, once the pod's
// processes are gone.
func (pc *podCredentials) release() {
	pc.mu.Lock()
	stop, renewed := pc.stop, pc.renewed
	pc.mu.Unlock()
	if stop != nil {
		stop()
		<-renewed
	}
	if err := os.RemoveAll(pc.dir); err != nil {
		pc.c.log.Warn("remove a pod's credentials", "pod", pc.pod.Namespace+"/"+pc.pod.Name, "err", err)
	}
	// The pod's directory too, unless the node keeps more there (it
	// removes it with the pod then).
	_ = os.Remove(filepath.Dir(pc.dir))
}

// untilAuthorized runs req again while the API server refuses it as
// Forbidden (the Node authorizer's graph is behind: see authorizerLag) or
// the object is not there yet (the root CA publisher's ConfigMap in a new
// namespace).
func untilAuthorized(ctx context.Context, req func(context.Context) error) error {
	return retry.OnError(authorizerLag, func(err error) bool {
		return ctx.Err() == nil && (apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || transient(err))
	}, func() error {
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		return req(rctx)
	})
}

// projectedPath is a source's path in the directory: its own, or def.
// Paths are relative and stay inside (the API server validates them; this
// keeps a bad one from escaping anyway).
func projectedPath(p, def string) string {
	p = filepath.Clean(p)
	if p == "." || p == "" || filepath.IsAbs(p) || strings.HasPrefix(p, "..") {
		return def
	}
	return p
}

// writeAtomic replaces path's content at once: a reader (client-go's
// tokenFile) sees the old token or the new one, never half of one.
func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o711); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

// objects reads the configMaps and secrets of pods' volumes for the node
// (node.VolumeGetter), with the node's credential: the Node authorizer
// lets a node read those its pods refer to. A refusal is tried again
// while the authorizer's graph may be behind (authorizerLag); a missing
// object is told at once, for the kubelet's FailedMount.
type objects struct{ core corev1client.CoreV1Interface }

func (o objects) ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	var cm *corev1.ConfigMap
	err := untilForbiddenEnds(ctx, func(ctx context.Context) error {
		var err error
		cm, err = o.core.ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
		return err
	})
	return cm, err
}

func (o objects) Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	var s *corev1.Secret
	err := untilForbiddenEnds(ctx, func(ctx context.Context) error {
		var err error
		s, err = o.core.Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
		return err
	})
	return s, err
}

// untilForbiddenEnds is untilAuthorized without waiting for a missing
// object.
func untilForbiddenEnds(ctx context.Context, req func(context.Context) error) error {
	return retry.OnError(authorizerLag, func(err error) bool {
		return ctx.Err() == nil && (apierrors.IsForbidden(err) || transient(err))
	}, func() error {
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		return req(rctx)
	})
}
