package node

import (
	"github.com/podgate/podgate/node/loopnet"
	"github.com/podgate/podgate/node/podnetwork"
)

// PodNetwork is the pod network of this node as the node agent uses it
// (package podnetwork's contract): it gives each pod an address and a
// place for its processes to run. The default (Options.Network nil) is
// the loopback network of `podgate run`; package node/netns/nodenet adapts
// podnet's network namespaces.
type PodNetwork = podnetwork.Network

// PodNet is one pod's network (podnetwork.Pod).
type PodNet = podnetwork.Pod

// DefaultPodCIDR is where `podgate run` takes pod IPs from. Two agents side
// by side need different ranges.
const DefaultPodCIDR = loopnet.DefaultCIDR

// CheckPodCIDR reports whether cidr can be a pod range (see Options.PodCIDR),
// for flag checks before anything is set up.
func CheckPodCIDR(cidr string) error { return loopnet.CheckCIDR(cidr) }

// PortConflictError says a container port is taken on the loopback
// network (see loopnet.PortConflictError).
type PortConflictError = loopnet.PortConflictError
