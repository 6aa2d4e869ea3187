// Package validation is podgate's admission: it checks a loaded, defaulted
// workload against the rules of the API server and, for a Knative
// Service, of Knative's webhook, with podgate's deliberate differences
// (docs/admission.md) — reserved names and ports, named probe ports
// resolved at admission, probe rules applied to readiness probes too. It
// reports every problem at once, each with its field path in the manifest;
// workload.Workload.Problems locates them in the file.
package validation
