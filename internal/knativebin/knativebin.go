// Package knativebin finds the binaries of the Knative stack that `podgate
// cluster up --knative` runs: kube-proxy v1.37.2, CoreDNS v1.15.0, Knative
// Serving v0.50.0's controller, webhook, activator, autoscaler and queue,
// and Traefik v3.6.12 (Knative's ingress). All static (CGO_ENABLED=0), so
// they run from images without a libc.
//
// As with internal/k8sbin, they are never assumed to be installed: Dir
// runs hack/knative-build.sh, which builds each piece from the versions
// pinned in its tools module (hack/k8s/kube-proxy, hack/coredns,
// hack/knative, hack/traefik) into a cache keyed by those pins, and links
// them into one directory (a cache hit takes milliseconds, a cold build
// of all of them tens of minutes; concurrent callers wait on the script's
// lock).
package knativebin

import (
	"io"
	"path/filepath"
	"sync"

	"github.com/podgate/podgate/internal/k8sbin"
)

// The binaries Dir provides.
const (
	KubeProxy  = "kube-proxy"
	CoreDNS    = "coredns"
	Controller = "knative-controller"
	Webhook    = "knative-webhook"
	Activator  = "knative-activator"
	Autoscaler = "knative-autoscaler"
	Queue      = "knative-queue" // Knative's queue-proxy
	Traefik    = "traefik"
)

// Names lists every binary Dir provides.
var Names = []string{KubeProxy, CoreDNS, Controller, Webhook, Activator, Autoscaler, Queue, Traefik}

// EnvDir names a directory that already holds the binaries; when set, Dir
// checks it and builds nothing.
const EnvDir = "PODGATE_KNATIVE_BIN"

// Script is the build script, relative to the module root.
const Script = "hack/knative-build.sh"

// Stack is the set Dir provides, for k8sbin.Set's methods.
var Stack = k8sbin.Set{
	What:   "Knative stack's binaries",
	Script: Script,
	EnvDir: EnvDir,
	Names:  Names,
}

var dir = sync.OnceValues(func() (string, error) { return Ensure(nil) })

// Dir returns the directory holding all of Names, building them first
// when the cache has none. The answer (a directory or an error) is
// computed once per process.
func Dir() (string, error) { return dir() }

// Path returns the path of one binary (one of Names).
func Path(name string) (string, error) {
	d, err := Dir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, name), nil
}

// Ensure is Dir for a command that needs the binaries once (`podgate
// cluster up --knative`): it is not cached, and the script's progress
// lines (on a cache miss, one as each piece's build starts and ends) are
// copied to progress as they come, when it is not nil.
func Ensure(progress io.Writer) (string, error) { return Stack.Ensure(progress) }
