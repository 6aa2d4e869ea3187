// Package kubeconfig finds the cluster a podgate component talks to, in
// the order kubectl users expect and in-cluster components need:
//
//  1. the path given on the command line (--kubeconfig);
//  2. $KUBECONFIG (a list of files, merged as kubectl merges them);
//  3. the pod's service account, when running in a cluster
//     ($KUBERNETES_SERVICE_HOST and the mounted token);
//  4. ~/.kube/config.
//
// The first that is present wins; one that is present but broken is an
// error, not a reason to try the next (a typo in --kubeconfig must not
// quietly talk to another cluster).
package kubeconfig

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// DefaultServiceAccountDir is where the kubelet mounts a pod's
// service-account token and the cluster's CA.
const DefaultServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// Source says where a configuration came from, for logs.
type Source string

// The sources, in the order they are tried.
const (
	FromFlag      Source = "--kubeconfig"
	FromEnv       Source = "$KUBECONFIG"
	FromInCluster Source = "in-cluster service account"
	FromHome      Source = "~/.kube/config"
)

// Loader resolves a configuration. The zero value looks at the real
// environment; tests set the fields.
type Loader struct {
	// Getenv reads the environment (default os.Getenv).
	Getenv func(string) string
	// ServiceAccountDir holds the in-cluster token and ca.crt (default
	// DefaultServiceAccountDir).
	ServiceAccountDir string
	// Home is the user's home directory (default os.UserHomeDir).
	Home string
}

// Load resolves the configuration with the real environment.
func Load(explicitPath string) (*rest.Config, Source, error) {
	return Loader{}.Load(explicitPath)
}

// Load resolves the configuration: explicitPath if not empty, then
// $KUBECONFIG, then the in-cluster service account, then ~/.kube/config.
func (l Loader) Load(explicitPath string) (*rest.Config, Source, error) {
	getenv := l.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if explicitPath != "" {
		cfg, err := fromFiles(&clientcmd.ClientConfigLoadingRules{ExplicitPath: explicitPath})
		if err != nil {
			return nil, FromFlag, fmt.Errorf("kubeconfig %s: %w", explicitPath, err)
		}
		return cfg, FromFlag, nil
	}
	if env := getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		cfg, err := fromFiles(&clientcmd.ClientConfigLoadingRules{Precedence: filepath.SplitList(env)})
		if err != nil {
			return nil, FromEnv, fmt.Errorf("kubeconfig from $KUBECONFIG (%s): %w", env, err)
		}
		return cfg, FromEnv, nil
	}
	if host := getenv("KUBERNETES_SERVICE_HOST"); host != "" {
		cfg, err := l.inCluster(host, getenv("KUBERNETES_SERVICE_PORT"))
		if err != nil {
			return nil, FromInCluster, err
		}
		return cfg, FromInCluster, nil
	}
	home := l.Home
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return nil, "", errors.New("no kubeconfig: --kubeconfig not given, $KUBECONFIG not set, not in a cluster, and no home directory")
		}
		home = h
	}
	path := filepath.Join(home, clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)
	if _, err := os.Stat(path); err != nil {
		return nil, "", fmt.Errorf("no kubeconfig: --kubeconfig not given, $KUBECONFIG not set, not in a cluster ($KUBERNETES_SERVICE_HOST not set), and %s: %w", path, err)
	}
	cfg, err := fromFiles(&clientcmd.ClientConfigLoadingRules{ExplicitPath: path})
	if err != nil {
		return nil, FromHome, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return cfg, FromHome, nil
}

// fromFiles loads kubeconfig files with their current context. The
// loading rules do not fall back to the in-cluster configuration: that
// is Load's third step, not a fallback of the first two.
func fromFiles(rules *clientcmd.ClientConfigLoadingRules) (*rest.Config, error) {
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	raw, err := cc.RawConfig()
	if err != nil {
		return nil, err
	}
	if len(raw.Contexts) == 0 && len(raw.Clusters) == 0 {
		return nil, errors.New("no cluster or context in it")
	}
	return cc.ClientConfig()
}

// inCluster is the configuration of a pod's service account: the API
// server at the `kubernetes` Service's address, the mounted CA, and the
// mounted token, re-read as the kubelet rotates it.
func (l Loader) inCluster(host, port string) (*rest.Config, error) {
	dir := l.ServiceAccountDir
	if dir == "" {
		dir = DefaultServiceAccountDir
	}
	if port == "" {
		return nil, errors.New("in-cluster: $KUBERNETES_SERVICE_HOST is set but $KUBERNETES_SERVICE_PORT is not")
	}
	tokenFile, caFile := filepath.Join(dir, "token"), filepath.Join(dir, "ca.crt")
	token, err := os.ReadFile(tokenFile)
	if err != nil {
		return nil, fmt.Errorf("in-cluster: service-account token: %w (is automountServiceAccountToken off?)", err)
	}
	if _, err := os.Stat(caFile); err != nil {
		return nil, fmt.Errorf("in-cluster: cluster CA: %w", err)
	}
	return &rest.Config{
		Host:            "https://" + net.JoinHostPort(host, port),
		TLSClientConfig: rest.TLSClientConfig{CAFile: caFile},
		BearerToken:     string(token),
		BearerTokenFile: tokenFile,
	}, nil
}

// Namespace is the namespace of the current context of the kubeconfig at
// explicitPath (or of $KUBECONFIG, ~/.kube/config when empty), as kubectl
// takes it; "default" when none says.
func Namespace(explicitPath string) string {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = explicitPath
	ns, _, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).Namespace()
	if err != nil || ns == "" {
		return "default"
	}
	return ns
}
