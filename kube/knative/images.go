package knative

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/podgate/podgate/internal/ociimage"
)

// Registry is the registry name of the stack's images. There is no
// registry: the node runs images from its OCI layout by name, and the
// manifests name them by digest. Knative's controller resolves a
// revision's image tags to digests over the network unless the image's
// registry is in config-deployment's registries-skipping-tag-resolving,
// which lists this name (see Options.SkipTagResolving).
const Registry = "podgate.local"

// The binaries hack/knative-build.sh puts into its bin directory.
const (
	BinController = "knative-controller"
	BinWebhook    = "knative-webhook"
	BinActivator  = "knative-activator"
	BinAutoscaler = "knative-autoscaler"
	BinQueue      = "knative-queue"
	BinTraefik    = "traefik"
	BinCoreDNS    = "coredns"
	BinKubeProxy  = "kube-proxy"
)

// imageTag is the tag every image gets in the layout (the manifests name
// them by digest).
const imageTag = "cluster"

// Images are the stack's images by digest (NAME@sha256:…), as the
// manifests name them.
type Images struct {
	Controller, Webhook, Activator, Autoscaler string
	// Queue is Knative's queue-proxy, "" when the bin directory has none
	// (only Options.Queue QueueKnative needs it).
	Queue     string
	Traefik   string
	CoreDNS   string
	KubeProxy string
}

// imageNames are the images' names (without tag or digest) by binary.
var imageNames = map[string]string{
	BinController: Registry + "/knative/controller",
	BinWebhook:    Registry + "/knative/webhook",
	BinActivator:  Registry + "/knative/activator",
	BinAutoscaler: Registry + "/knative/autoscaler",
	BinQueue:      Registry + "/knative/queue",
	BinTraefik:    Registry + "/traefik",
	BinCoreDNS:    Registry + "/coredns",
	BinKubeProxy:  Registry + "/kube-proxy",
}

// slots is where each binary's image goes in Images.
func (im *Images) slots() map[string]*string {
	return map[string]*string{
		BinController: &im.Controller, BinWebhook: &im.Webhook, BinActivator: &im.Activator,
		BinAutoscaler: &im.Autoscaler, BinQueue: &im.Queue, BinTraefik: &im.Traefik,
		BinCoreDNS: &im.CoreDNS, BinKubeProxy: &im.KubeProxy,
	}
}

// BuildImages puts each binary of binDir (hack/knative-build.sh's
// directory: static Linux binaries) into an OCI image of its own in the
// layout dir the node runs images from, as podgate's own image is built
// (ociimage: the binary alone, at /podgate, its entrypoint, user
// 65532), and returns them by digest. Every binary but knative-queue is
// required.
func BuildImages(binDir, layout string) (Images, error) {
	var im Images
	for bin, slot := range im.slots() {
		path := filepath.Join(binDir, bin)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) && bin == BinQueue {
			continue
		} else if err != nil {
			return Images{}, fmt.Errorf("knative images: %w (build the binaries with hack/knative-build.sh)", err)
		}
		ref := imageNames[bin] + ":" + imageTag
		img, digest, err := ociimage.Build(path, ref)
		if err != nil {
			return Images{}, fmt.Errorf("knative images: %w", err)
		}
		if err := ociimage.WriteLayout(layout, ref, img); err != nil {
			return Images{}, fmt.Errorf("knative images: %w", err)
		}
		*slot = imageNames[bin] + "@" + digest.String()
	}
	return im, nil
}

// splitRef is NAME and DIGEST of a reference NAME@DIGEST.
func splitRef(ref string) (name, digest string, err error) {
	name, digest, ok := strings.Cut(ref, "@")
	if !ok || name == "" || !strings.HasPrefix(digest, "sha256:") {
		return "", "", fmt.Errorf("image %q: want NAME@sha256:DIGEST", ref)
	}
	return name, digest, nil
}
