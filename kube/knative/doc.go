// Package knative is the Knative stack's manifests for the cluster
// `podgate cluster up --knative` starts, as `kubectl apply -k` applies
// them, in order:
//
//   - BuildImages puts the stack's static binaries (hack/knative-build.sh's
//     bin directory) into OCI images in the layout the node runs images
//     from, and names each by digest;
//   - Sources finds Knative Serving's own manifests (config/core of
//     knative.dev/serving at ServingVersion) and the networking and caching
//     CRDs at the versions serving's go.mod requires, in the Go module
//     cache (`go mod download`): they are read there at install time, never
//     copied into this repository;
//   - Write lays out one kustomization per Step: the cluster's networking
//     (kube-proxy, CoreDNS: embedded here, kubeadm's layout), Knative's
//     CRDs, Knative Serving (its manifests unchanged, the overlay pinning
//     its images by digest and setting config-deployment, config-features,
//     config-network and config-domain), and Traefik as the Knative ingress
//     (embedded here);
//   - Install applies the Steps with the cluster's kubectl, each after
//     what the one before waits for (CRDs established, Deployments and
//     DaemonSets rolled out).
//
// Prepare does the first three in one call; `cluster up --knative` then
// runs, roughly:
//
//	steps, err := knative.Prepare(ctx, binDir, layoutDir, knative.Options{
//		Dir:         filepath.Join(clusterDir, "knative"),
//		Queue:       knative.QueueGate, // or QueueKnative
//		GateImage:   img.GateRef,       // install.BuildImage's
//		PodCIDR:     podCIDR,
//		ServiceCIDR: controlplane.DefaultServiceCIDR,
//		APIServer:   "https://" + gatewayHostPort, // as the node's network reaches it
//	})
//	err = knative.Install(ctx, knative.Kubectl{Path: kubectl, Kubeconfig: admin}, steps)
//
// with the node's cluster DNS at DNSServiceIP(ServiceCIDR), and a host
// loopback port forwarded to Service IngressService of IngressNamespace
// (port IngressPort).
package knative
