package controlplane

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/podgate/podgate/internal/certs"
)

// serviceAccountIssuer is the `iss` of the service-account tokens, the
// in-cluster name of the API server as kubeadm sets it.
const serviceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

// Identities of the client certificates (the user is the common name, the
// groups the organizations), as the bootstrap RBAC policy expects them.
const (
	adminUser             = "kubernetes-admin"
	mastersGroup          = "system:masters"
	controllerManagerUser = "system:kube-controller-manager"
	schedulerUser         = "system:kube-scheduler"
	nodeUserPrefix        = "system:node:"
	nodesGroup            = "system:nodes"
	frontProxyUser        = "front-proxy-client"
	// KubeletClientUser is the API server's identity towards the kubelets
	// (its --kubelet-client-certificate), kubeadm's name for it; RBAC
	// grants it the bootstrap ClusterRole system:kubelet-api-admin.
	KubeletClientUser = "kube-apiserver-kubelet-client"
)

// ports are the free ports the components listen on.
type ports struct {
	etcdClient, etcdPeer, apiServer, controllerManager, scheduler int
}

// files are the paths the components are given.
type files struct {
	caCert, caKey                       string
	apiServerCert, apiServerKey         string
	saKey, saPub                        string
	frontProxyCA                        string
	frontProxyCert, frontProxyKey       string
	kubeletClientCert, kubeletClientKey string
	kcmCert, kcmKey                     string
	schedulerCert, schedulerKey         string
	adminKubeconfig                     string
	kcmKubeconfig, schedulerKubeconfig  string
}

// pki holds what issues and what was issued.
type pki struct {
	ca, admin *certs.KeyPair
}

// choosePorts takes free ports: each is bound on its address and
// released, so another process could take one in between; the component
// that then fails to bind exits, and Start reports it with its log.
func (c *ControlPlane) choosePorts() error {
	var err error
	free := func(host string) int {
		if err != nil {
			return 0
		}
		var l net.Listener
		if l, err = net.Listen("tcp", net.JoinHostPort(host, "0")); err != nil {
			err = fmt.Errorf("controlplane: free port on %s: %w", host, err)
			return 0
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port
	}
	// Taken together, so that no two are the same.
	c.ports = ports{
		etcdClient:        free("127.0.0.1"),
		etcdPeer:          free("127.0.0.1"),
		apiServer:         free(c.opts.BindAddress),
		controllerManager: free("127.0.0.1"),
		scheduler:         free("127.0.0.1"),
	}
	host := c.opts.BindAddress
	if a := netip.MustParseAddr(host); a.IsUnspecified() {
		host = "127.0.0.1"
	}
	c.url = "https://" + net.JoinHostPort(host, strconv.Itoa(c.ports.apiServer))
	return err
}

// firstServiceIP is the `kubernetes` Service's ClusterIP: the range's
// first address after the network's.
func firstServiceIP(cidr string) net.IP {
	p := netip.MustParsePrefix(cidr).Masked()
	return net.IP(p.Addr().Next().AsSlice())
}

// writePKI makes the certificates, keys and kubeconfigs in DIR/pki and
// DIR.
func (c *ControlPlane) writePKI() error {
	dir := filepath.Join(c.opts.Dir, "pki")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ca, err := newCA("podgate-kubernetes-ca")
	if err != nil {
		return err
	}
	frontCA, err := newCA("podgate-front-proxy-ca")
	if err != nil {
		return err
	}
	f := &c.files
	if f.caCert, f.caKey, err = writePair(ca, dir, "ca"); err != nil {
		return err
	}
	if f.frontProxyCA, _, err = writePair(frontCA, dir, "front-proxy-ca"); err != nil {
		return err
	}
	ips := []net.IP{net.ParseIP("127.0.0.1"), firstServiceIP(c.opts.ServiceCIDR)}
	for _, a := range []string{c.opts.BindAddress, c.opts.AdvertiseAddress} {
		if ip := net.ParseIP(a); !ip.IsUnspecified() && !ip.IsLoopback() {
			ips = append(ips, ip)
		}
	}
	loopback := []net.IP{net.ParseIP("127.0.0.1")}
	issued := []struct {
		ca        *certs.KeyPair
		name      string
		spec      certSpec
		cert, key *string
	}{
		{ca, "apiserver", certSpec{commonName: "kube-apiserver", server: true, ips: ips,
			dnsNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}},
			&f.apiServerCert, &f.apiServerKey},
		{frontCA, "front-proxy-client", certSpec{commonName: frontProxyUser, client: true}, &f.frontProxyCert, &f.frontProxyKey},
		// What the API server shows a node's kubelet API (logs, exec,
		// port-forward), which authorizes it with a SubjectAccessReview.
		{ca, "apiserver-kubelet-client", certSpec{commonName: KubeletClientUser, client: true}, &f.kubeletClientCert, &f.kubeletClientKey},
		// The controller manager and the scheduler serve /healthz on
		// certificates of the cluster's CA, so their health is checked
		// with verification as everything else.
		{ca, "kube-controller-manager", certSpec{commonName: "kube-controller-manager", server: true, ips: loopback, dnsNames: []string{"localhost"}},
			&f.kcmCert, &f.kcmKey},
		{ca, "kube-scheduler", certSpec{commonName: "kube-scheduler", server: true, ips: loopback, dnsNames: []string{"localhost"}},
			&f.schedulerCert, &f.schedulerKey},
	}
	for _, is := range issued {
		kp, err := issue(is.ca, is.spec)
		if err != nil {
			return err
		}
		if *is.cert, *is.key, err = writePair(kp, dir, is.name); err != nil {
			return err
		}
	}
	if f.saKey, f.saPub, err = writeServiceAccountKey(dir); err != nil {
		return err
	}
	c.pki = &pki{ca: ca}
	return c.writeKubeconfigs()
}

// writeKubeconfigs writes the kubeconfigs of the admin, the controller
// manager and the scheduler.
func (c *ControlPlane) writeKubeconfigs() error {
	f := &c.files
	ca := c.pki.ca
	var err error
	if c.pki.admin, err = issue(ca, certSpec{commonName: adminUser, orgs: []string{mastersGroup}, client: true}); err != nil {
		return err
	}
	clients := []struct {
		user, path string
		kp         **certs.KeyPair
		file       *string
	}{
		{adminUser, "admin.kubeconfig", &c.pki.admin, &f.adminKubeconfig},
		{controllerManagerUser, "controller-manager.kubeconfig", nil, &f.kcmKubeconfig},
		{schedulerUser, "scheduler.kubeconfig", nil, &f.schedulerKubeconfig},
	}
	for _, cl := range clients {
		kp := (*certs.KeyPair)(nil)
		if cl.kp != nil {
			kp = *cl.kp
		} else if kp, err = issue(ca, certSpec{commonName: cl.user, client: true}); err != nil {
			return err
		}
		*cl.file = filepath.Join(c.opts.Dir, cl.path)
		if err := c.writeKubeconfig(*cl.file, cl.user, kp); err != nil {
			return err
		}
	}
	return nil
}

// NodeKubeconfig issues a client certificate for node name — user
// system:node:NAME in group system:nodes, the identity the Node authorizer
// and NodeRestriction admission limit to that node — and writes a
// kubeconfig for it (DIR/node-NAME.kubeconfig), returning its path.
func (c *ControlPlane) NodeKubeconfig(name string) (string, error) {
	kp, err := issue(c.pki.ca, certSpec{commonName: nodeUserPrefix + name, orgs: []string{nodesGroup}, client: true})
	if err != nil {
		return "", fmt.Errorf("controlplane: node %s: %w", name, err)
	}
	path := filepath.Join(c.opts.Dir, "node-"+name+".kubeconfig")
	if err := c.writeKubeconfig(path, nodeUserPrefix+name, kp); err != nil {
		return "", fmt.Errorf("controlplane: node %s: %w", name, err)
	}
	return path, nil
}

// KubeletServing issues the serving certificate of node name's kubelet
// API for its addresses ips (the API server reaches the node by its
// InternalIP and checks the certificate against the cluster's CA, its
// --kubelet-certificate-authority), and returns it with the CA that
// signed the API server's client certificate, for the node to verify
// its callers with.
func (c *ControlPlane) KubeletServing(name string, ips []net.IP) (cert *certs.KeyPair, clientCA []byte, err error) {
	kp, err := issue(c.pki.ca, certSpec{commonName: nodeUserPrefix + name, orgs: []string{nodesGroup}, server: true, ips: ips, dnsNames: []string{name}})
	if err != nil {
		return nil, nil, fmt.Errorf("controlplane: kubelet serving certificate of node %s: %w", name, err)
	}
	return kp, c.pki.ca.CertPEM, nil
}

// IssueClient issues a client certificate of the cluster's CA for user in
// groups, as an administrator signs one (a test's unprivileged caller).
func (c *ControlPlane) IssueClient(user string, groups ...string) (*certs.KeyPair, error) {
	kp, err := issue(c.pki.ca, certSpec{commonName: user, orgs: groups, client: true})
	if err != nil {
		return nil, fmt.Errorf("controlplane: client certificate of %s: %w", user, err)
	}
	return kp, nil
}

func (c *ControlPlane) writeKubeconfig(path, user string, kp *certs.KeyPair) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["podgate"] = &clientcmdapi.Cluster{Server: c.url, CertificateAuthorityData: c.pki.ca.CertPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: kp.CertPEM, ClientKeyData: kp.KeyPEM}
	cfg.Contexts["podgate"] = &clientcmdapi.Context{Cluster: "podgate", AuthInfo: user}
	cfg.CurrentContext = "podgate"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return os.Chmod(path, 0o600)
}

// restConfig is a client-go config for the holder of kp, with the
// kubelet's request rates rather than client-go's default of 5 per
// second, which a test creating objects in bursts would wait on.
func (c *ControlPlane) restConfig(kp *certs.KeyPair) *rest.Config {
	return &rest.Config{
		Host: c.url,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   c.pki.ca.CertPEM,
			CertData: kp.CertPEM,
			KeyData:  kp.KeyPEM,
		},
		QPS:   50,
		Burst: 100,
	}
}
