// Package install is podgate installed on the cluster `podgate cluster
// up` starts, as `kubectl apply -k kube/deploy/base` installs it on any
// cluster:
//
//   - BuildImage puts a static podgate into an OCI image, in a layout
//     the node runs images from (podgate itself when it is a static
//     binary; else one built from the source tree with CGO_ENABLED=0),
//     and the gate's image beside it (podgate-gate built from the source
//     tree; elsewhere podgate's own image stands for it);
//   - Apply applies kube/deploy/base (embedded in the binary, package deploy)
//     with podgate's image by digest through a kustomize overlay, the
//     webhook injecting the gate's image by digest, with the cluster's
//     kubectl, and waits until the webhook and the activator are ready;
//   - ServeFrontDoor, in the cluster's network namespace, forwards the
//     host's front door to the activator's ready endpoints, as
//     kube-proxy would route its Service (there is none).
package install
