// Package workload reads what podgate runs: Pod, Deployment and Knative
// Service manifests, YAML or JSON, strictly decoded, normalized to a
// Workload with the API server's and Knative's defaults and its serving
// container picked, every problem located by file, document and field
// path (Problem). It writes them back out. The admission rules are
// package admission/validation's, the gate's injection package
// admission/inject's.
package workload
