// Package kubecmds holds podgate's commands for Kubernetes: `podgate
// node` (the node agent as a cluster's kubelet), `cluster up|down`,
// `admission/webhook`, `activator`, `record` and `node-status` (the
// gates' node status service). Each turns flags into the Config of
// the package that does the work.
package kubecmds

// Version is the podgate version the node reports and `cluster up`
// builds into its image; cmd/podgate sets it before running a command.
var Version = "devel"
