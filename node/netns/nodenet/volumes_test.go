//go:build linux

package nodenet_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/podgate/podgate/node"
	"github.com/podgate/podgate/node/netns"
)

// objects are the configMaps and secrets of the test's "API server", as
// the node reads them (its Options.Volumes): the role creates and
// updates them while the node runs.
type objects struct {
	mu      sync.Mutex
	cms     map[string]map[string]string
	secrets map[string]map[string][]byte
}

func (o *objects) ConfigMap(_ context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	d, ok := o.cms[name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
	}
	cm := &corev1.ConfigMap{Data: map[string]string{}}
	cm.Namespace, cm.Name = namespace, name
	for k, v := range d {
		cm.Data[k] = v
	}
	return cm, nil
}

func (o *objects) Secret(_ context.Context, namespace, name string) (*corev1.Secret, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	d, ok := o.secrets[name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
	}
	s := &corev1.Secret{Data: map[string][]byte{}}
	s.Namespace, s.Name = namespace, name
	for k, v := range d {
		s.Data[k] = v
	}
	return s, nil
}

func (o *objects) setConfigMap(name string, data map[string]string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.cms[name] = data
}

// volReport is what volcheck found where it ran.
type volReport struct {
	Uid    string             `json:"uid"`
	Groups string             `json:"groups"`
	Files  map[string]volFile `json:"files"`
	Writes map[string]string  `json:"writes"` // path → error, "" when written
	Client *inClusterReport   `json:"client,omitempty"`
}

type volFile struct {
	Content string `json:"content"`
	Mode    string `json:"mode"`
	Gid     uint32 `json:"gid"`
	Err     string `json:"err,omitempty"`
}

type inClusterReport struct {
	Host      string `json:"host"`
	Token     string `json:"token"`
	TokenFile string `json:"tokenFile"`
	CAFile    string `json:"caFile"`
	Err       string `json:"err,omitempty"`
}

const volReportPrefix = "VOLREPORT "
const volWatchPrefix = "VOLWATCH "

// runVolCheck prints a volReport (a line "VOLREPORT JSON"): the files of
// -read (comma-separated) with their mode and group, the outcome of each
// write of -write (path=content, comma-separated), and with -incluster
// what client-go's in-cluster configuration makes of the pod. With -watch
// it then prints "VOLWATCH CONTENT" whenever that file's content changes,
// until killed; else arguments after the flags are a command it becomes.
func runVolCheck(args []string) int {
	fs := flag.NewFlagSet("volcheck", flag.ContinueOnError)
	read := fs.String("read", "", "files to read, comma-separated")
	write := fs.String("write", "", "path=content to write, comma-separated")
	incluster := fs.Bool("incluster", false, "report rest.InClusterConfig()")
	watch := fs.String("watch", "", "print this file's content whenever it changes")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	r := volReport{Files: map[string]volFile{}, Writes: map[string]string{}}
	status, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(status), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			switch k {
			case "Uid":
				r.Uid = strings.Fields(v)[0]
			case "Groups":
				r.Groups = strings.Join(strings.Fields(v), " ")
			}
		}
	}
	for _, p := range splitList(*read) {
		var f volFile
		if info, err := os.Stat(p); err != nil {
			f.Err = err.Error()
		} else {
			f.Mode = fmt.Sprintf("%#o", info.Mode().Perm())
			f.Gid = info.Sys().(*syscall.Stat_t).Gid
			b, err := os.ReadFile(p)
			if err != nil {
				f.Err = err.Error()
			}
			f.Content = string(b)
		}
		r.Files[p] = f
	}
	for _, w := range splitList(*write) {
		p, content, _ := strings.Cut(w, "=")
		r.Writes[p] = ""
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			r.Writes[p] = err.Error()
		}
	}
	if *incluster {
		c := &inClusterReport{}
		if cfg, err := rest.InClusterConfig(); err != nil {
			c.Err = err.Error()
		} else {
			c.Host, c.Token, c.TokenFile, c.CAFile = cfg.Host, cfg.BearerToken, cfg.BearerTokenFile, cfg.TLSClientConfig.CAFile
		}
		r.Client = c
	}
	b, err := json.Marshal(r)
	if err != nil {
		fmt.Fprintln(os.Stderr, "volcheck:", err)
		return 1
	}
	fmt.Printf("%s%s\n", volReportPrefix, b)
	if *watch != "" {
		last := "\x00"
		for {
			b, err := os.ReadFile(*watch)
			if err == nil && string(b) != last {
				last = string(b)
				fmt.Printf("%s%s\n", volWatchPrefix, last)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if rest := fs.Args(); len(rest) > 0 {
		self, err := os.Executable()
		if err == nil {
			err = syscall.Exec(self, append([]string{self}, rest...), os.Environ())
		}
		fmt.Fprintln(os.Stderr, "volcheck: exec:", err)
		return 1
	}
	return 0
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

// volReportOf waits for the report container c of pod printed.
func (n *testNode) volReportOf(pod, c string) (volReport, error) {
	var r volReport
	prefix := pod + "/" + c + " | " + volReportPrefix
	err := poll("volcheck's report from "+pod+"/"+c, func() (bool, string) {
		for _, line := range strings.Split(n.out.String(), "\n") {
			if rest, ok := strings.CutPrefix(line, prefix); ok {
				return json.Unmarshal([]byte(rest), &r) == nil, rest
			}
		}
		return false, "no report yet"
	})
	return r, err
}

// Paths the pods mount their volumes at: none exists on this machine,
// and none may after the test (the node makes them in each container's
// mount namespace only).
const (
	volConfigDir  = "/etc/podgate-vol-test"
	volLibDir     = "/var/lib/podgate-vol-test"
	volLateDir    = "/etc/podgate-vol-late"
	saDir         = "/var/run/secrets/kubernetes.io/serviceaccount"
	saTokenVolume = "kube-api-access-test"
)

func volumesManifest() string {
	app := yamlList([]string{self(), "volcheck",
		"-read", strings.Join([]string{
			volConfigDir + "/greeting", volLibDir + "/creds/sub/pw", volLibDir + "/scratch/hello",
			saDir + "/token", saDir + "/ca.crt", saDir + "/namespace",
			volLibDir + "/greeting-copy", volLibDir + "/info/labels",
			"/etc/hosts", "/etc/passwd",
		}, ","),
		"-write", strings.Join([]string{
			volLibDir + "/scratch/from-app=ok", volConfigDir + "/x=no", "/podgate-vol-test-root=no",
		}, ","),
		"-incluster", "-watch", volConfigDir + "/greeting"})
	writer := yamlList([]string{self(), "volcheck", "-write", volLibDir + "/scratch/hello=from-writer"})
	late := yamlList([]string{self(), "volcheck", "-read", volLateDir + "/k", "-watch", volLateDir + "/k"})
	user := `{runAsUser: 65532, runAsGroup: 65532, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}`
	return podYAML("volpod", fmt.Sprintf(`  securityContext: {fsGroup: 2000}
  volumes:
  - name: config
    configMap: {name: app-config}
  - name: creds
    secret:
      secretName: app-secret
      defaultMode: 420
      items: [{key: password, path: sub/pw, mode: 256}]
  - name: scratch
    emptyDir: {}
  - name: info
    downwardAPI: {items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}]}
  - name: %[5]s
    projected:
      sources:
      - serviceAccountToken: {path: token, expirationSeconds: 3607}
      - configMap: {name: kube-root-ca.crt, items: [{key: ca.crt, path: ca.crt}]}
      - downwardAPI: {items: [{path: namespace, fieldRef: {apiVersion: v1, fieldPath: metadata.namespace}}]}
  initContainers:
  - name: writer
    image: ghcr.io/podgate/testapp
    command: %[1]s
    securityContext: %[4]s
    volumeMounts: [{name: scratch, mountPath: %[6]s/scratch}]
  containers:
  - name: app
    image: ghcr.io/podgate/testapp
    command: %[2]s
    env:
    - {name: KUBERNETES_SERVICE_HOST, value: 10.96.0.1}
    - {name: KUBERNETES_SERVICE_PORT, value: "443"}
    securityContext: %[4]s
    volumeMounts:
    - {name: config, mountPath: %[7]s, readOnly: true}
    - {name: creds, mountPath: %[6]s/creds, readOnly: true}
    - {name: scratch, mountPath: %[6]s/scratch}
    - {name: info, mountPath: %[6]s/info}
    - {name: config, mountPath: %[6]s/greeting-copy, subPath: greeting}
    - {name: %[5]s, mountPath: %[8]s, readOnly: true}
`, writer, app, late, user, saTokenVolume, volLibDir, volConfigDir, saDir)) + "---\n" + podYAML("latepod", fmt.Sprintf(`  volumes:
  - name: late
    configMap: {name: late}
  containers:
  - name: app
    image: ghcr.io/podgate/testapp
    command: %s
    securityContext: %s
    volumeMounts: [{name: late, mountPath: %s}]
`, late, user, volLateDir))
}

// saSetup stands in for node/kube's service-account credentials: the
// token volume's files, written by Prepare into a directory of the pod's
// that the node mounts as the volume.
func saSetup(dir string) node.PodSetupFunc {
	return func(pod *corev1.Pod) node.PodExtras {
		d := filepath.Join(dir, "sa-"+pod.Name)
		return node.PodExtras{
			Volumes: map[string]string{saTokenVolume: d},
			Prepare: func(context.Context) error {
				if err := os.MkdirAll(d, 0o755); err != nil {
					return err
				}
				ca, err := selfSignedPEM()
				if err != nil {
					return err
				}
				for name, content := range map[string]string{"token": "test-token", "ca.crt": ca, "namespace": pod.Namespace} {
					if err := os.WriteFile(filepath.Join(d, name), []byte(content), 0o644); err != nil {
						return err
					}
				}
				return nil
			},
			Release: func() { _ = os.RemoveAll(d) },
		}
	}
}

// volumesRole: the node mounts a pod's volumes as the kubelet does, in
// each container's own mount namespace, this machine's file system
// untouched: a configMap (read-only: a write fails with EROFS; an update
// reaches the running container), a secret's item at its path with its
// mode and the pod's fsGroup (readable by the container's user through
// that group alone), an emptyDir an init container writes and the main
// container reads and writes under a read-only root, a downwardAPI file,
// a subPath, and the service-account volume at
// /var/run/secrets/kubernetes.io/serviceaccount, from which client-go's
// in-cluster configuration reads its token, as user 65532. A pod whose
// configMap is missing waits with the kubelet's FailedMount and starts
// once it is created.
func volumesRole(cidr, dir string) error {
	objs := &objects{
		cms:     map[string]map[string]string{"app-config": {"greeting": "hello"}},
		secrets: map[string]map[string][]byte{"app-secret": {"password": []byte("s3cret"), "other": []byte("x")}},
	}
	n, err := startNodeWith(cidr, volumesManifest, nil, func(_ *netns.Cluster, o *node.Options) error {
		o.Volumes = objs
		o.VolumeResync = 200 * time.Millisecond
		o.PodSetup = saSetup(dir)
		o.PodsDir = filepath.Join(dir, "pods")
		return nil
	})
	if err != nil {
		return err
	}
	err = n.finish(n.checkVolumes(objs))
	if err != nil {
		return err
	}
	var left []string
	for _, p := range []string{volConfigDir, volLibDir, volLateDir, "/run/secrets/kubernetes.io", "/podgate-vol-test-root"} {
		if _, err := os.Lstat(p); err == nil {
			left = append(left, p)
		}
	}
	// Each pod's directory (its volumes, its DNS files) goes with it.
	pods, _ := filepath.Glob(filepath.Join(dir, "pods", "*"))
	left = append(left, pods...)
	if len(left) > 0 {
		return fmt.Errorf("left on this machine: %v", left)
	}
	return nil
}

func (n *testNode) checkVolumes(objs *objects) error {
	r, err := n.volReportOf("volpod", "app")
	if err != nil {
		return err
	}
	var errs []error
	file := func(path, content, mode string, gid uint32) {
		f := r.Files[path]
		if f.Err != "" || f.Content != content || f.Mode != mode || gid != 0 && f.Gid != gid {
			errs = append(errs, fmt.Errorf("%s: %q mode %s group %d (%s), want %q mode %s group %d", path, f.Content, f.Mode, f.Gid, f.Err, content, mode, gid))
		}
	}
	if r.Uid != "65532" || !strings.Contains(" "+r.Groups+" ", " 2000 ") {
		errs = append(errs, fmt.Errorf("ran as uid %s groups %q, want 65532 with the fsGroup 2000", r.Uid, r.Groups))
	}
	file(volConfigDir+"/greeting", "hello", "0644", 2000)
	// 0400 asked, the fsGroup's read bit added: the user reads it as a
	// member of the group only.
	file(volLibDir+"/creds/sub/pw", "s3cret", "0440", 2000)
	file(volLibDir+"/scratch/hello", "from-writer", "0644", 2000)
	file(saDir+"/token", "test-token", "0644", 0)
	file(saDir+"/namespace", "default", "0644", 0)
	if f := r.Files[saDir+"/ca.crt"]; f.Err != "" || !strings.HasPrefix(f.Content, "-----BEGIN CERTIFICATE-----") {
		errs = append(errs, fmt.Errorf("ca.crt: %q (%s)", f.Content, f.Err))
	}
	file(volLibDir+"/greeting-copy", "hello", "0644", 2000)
	if f := r.Files[volLibDir+"/info/labels"]; f.Err != "" || f.Content != "" {
		// The pod has no labels: an empty file.
		errs = append(errs, fmt.Errorf("downwardAPI labels: %q (%s)", f.Content, f.Err))
	}
	// /etc is shadowed in the container (its mount path is not on the
	// host): the directory's entries are still there, the pod's hosts
	// file bound over /etc/hosts among them.
	if f := r.Files["/etc/hosts"]; !strings.HasPrefix(f.Content, "# Kubernetes-managed hosts file.") {
		errs = append(errs, fmt.Errorf("/etc/hosts under a shadowed /etc: %q (%s), want the pod's", f.Content, f.Err))
	}
	if passwd, err := os.ReadFile("/etc/passwd"); err != nil || r.Files["/etc/passwd"].Content != string(passwd) {
		errs = append(errs, fmt.Errorf("/etc/passwd under a shadowed /etc differs from the host's (%v, %s)", err, r.Files["/etc/passwd"].Err))
	}
	if e := r.Writes[volLibDir+"/scratch/from-app"]; e != "" {
		errs = append(errs, fmt.Errorf("write to the emptyDir under a read-only root: %s", e))
	}
	for _, p := range []string{volConfigDir + "/x", "/podgate-vol-test-root"} {
		if e := r.Writes[p]; !strings.Contains(e, "read-only file system") {
			errs = append(errs, fmt.Errorf("write to %s: %q, want EROFS", p, e))
		}
	}
	if c := r.Client; c == nil || c.Err != "" || c.Host != "https://10.96.0.1:443" || c.Token != "test-token" || c.TokenFile != saDir+"/token" || c.CAFile != saDir+"/ca.crt" {
		errs = append(errs, fmt.Errorf("in-cluster config from the pod: %+v", c))
	}
	if err := n.waitOutput("volpod/app | " + volWatchPrefix + "hello"); err != nil {
		errs = append(errs, err)
	}
	// An update of the configMap reaches the running container.
	objs.setConfigMap("app-config", map[string]string{"greeting": "bonjour"})
	if err := n.waitOutput("volpod/app | " + volWatchPrefix + "bonjour"); err != nil {
		errs = append(errs, err)
	}
	// The pod whose configMap is missing waits, with the kubelet's event.
	want := `MountVolume.SetUp failed for volume "late" : configmap "late" not found`
	if err := poll("FailedMount of latepod", func() (bool, string) {
		evs, _ := n.store.Events.List("default")
		for _, e := range evs {
			if e.Reason == "FailedMount" && e.InvolvedObject.Name == "latepod" {
				return e.Message == want, e.Message
			}
		}
		return false, "no event"
	}); err != nil {
		errs = append(errs, err)
	}
	if strings.Contains(n.out.String(), "latepod/app |") {
		errs = append(errs, errors.New("latepod's container started without its configMap"))
	}
	objs.setConfigMap("late", map[string]string{"k": "here now"})
	lr, err := n.volReportOf("latepod", "app")
	if err != nil {
		errs = append(errs, err)
	} else if f := lr.Files[volLateDir+"/k"]; f.Content != "here now" {
		errs = append(errs, fmt.Errorf("latepod read %q (%s), want the configMap created after", f.Content, f.Err))
	}
	return errors.Join(errs...)
}

// waitOutput waits for a line of the containers' output.
func (n *testNode) waitOutput(line string) error {
	return poll("output "+line, func() (bool, string) {
		return strings.Contains("\n"+n.out.String()+"\n", "\n"+line+"\n"), "not yet"
	})
}

// selfSignedPEM is a CA certificate, as the kube-root-ca.crt ConfigMap
// holds one (client-go's in-cluster configuration parses it).
func selfSignedPEM() (string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return "", err
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), nil
}
