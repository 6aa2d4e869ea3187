// Package env builds a container's environment the way the kubelet does:
// the base every container inherits, what the node agent injects
// (HOSTNAME, POD_IP, …), then envFrom, then env in order, each value with
// $(VAR) expanded from the variables defined before it, and the downward
// API (fieldRef, resourceFieldRef). Sources that exist only in a cluster
// (ConfigMaps, Secrets) are errors naming the field, unless optional.
package env
