// Package deploy holds podgate's kustomize manifests (base, knative) as
// files for kubectl, and the base also embedded in the
// binary: `podgate cluster up` installs it on the cluster it starts,
// wherever the binary runs from, without the source tree.
package deploy

import "embed"

// Base is kube/deploy/base: the namespace podgate-system and its components
// (webhook, activator, node-status), under "base/".
//
//go:embed base
var Base embed.FS

// Image is podgate's image, the one every manifest of Base names; an
// overlay's `images:` entry of this name pins it.
const Image = "ghcr.io/podgate/podgate"

// GateImage is the gate's own image (podgate-gate, the gate alone): the
// webhook injects it (its --gate-image, by default this one), and
// kube/deploy/knative makes it Knative's queue sidecar.
const GateImage = "ghcr.io/podgate/podgate-gate"

// Version is the release whose images every manifest of kube/deploy
// names, by tag: podgate's (Image) in Base's Deployments and DaemonSet,
// the gate's (GateImage) in the webhook's --gate-image and Knative's
// queue-sidecar-image. A user applying kube/deploy at a release's tag
// gets that release's images, never :latest; an overlay's `images:`
// (and a later --gate-image) pins a digest, as `podgate cluster up`
// does with the images it builds. A release sets it and the manifests
// together (TestManifestsNameTheReleaseImages).
const Version = "v0.3.0"

// Namespace is podgate's own namespace in Base.
const Namespace = "podgate-system"

// The Deployments and Services of Base, by name.
const (
	Webhook   = "podgate-webhook"
	Activator = "podgate-activator"
)

// NodeStatus is Base's DaemonSet of the node status service (one per
// node, on the node's address at contract.NodeStatusPort), and its
// service account.
const NodeStatus = "podgate-node-status"
