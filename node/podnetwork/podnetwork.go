// Package podnetwork is the pod network as the node agent uses it, the
// CNI plugin's part on a kubelet's node: the contract a network meets
// (Network gives each pod an address and a place for its processes to
// run, released once none runs) and the node agent's default, the
// loopback network of `podgate run` (Loopback, over package loopnet).
// Package node takes the contract as node.PodNetwork; package
// node/netns/nodenet meets it with podnet's network namespaces.
package podnetwork

import (
	"net/netip"

	"github.com/podgate/podgate/node/loopnet"
)

// Network is the pod network of one node.
type Network interface {
	// Add gives the pod keyed podKey (its UID) a network, until its
	// Pod is closed. An error names what ran out or failed.
	Add(podKey string) (Pod, error)
	// Capacity is how many pods can have a network at once and the range
	// their addresses come from (Agent.Capacity): `podgate run` refuses
	// workloads that start more.
	Capacity() (pods int, cidr netip.Prefix)
}

// Pod is one pod's network.
type Pod interface {
	// IP is the pod's address: status.podIP, $POD_IP, and where the node
	// dials its httpGet, tcpSocket and grpc probes and hooks.
	IP() netip.Addr
	// Enter runs fn on the calling goroutine's OS thread from inside the
	// pod's network and brings the thread back: a process fn forks starts
	// in the pod's network. The agent wraps the start of every process of
	// the pod in it: containers, exec probes, exec hooks. Should the way
	// back fail, Enter must leave the thread locked to the goroutine
	// (runtime.LockOSThread) and return an error, so the thread ends with
	// the goroutine instead of serving others in the wrong namespace. On
	// the loopback network it is fn().
	Enter(fn func() error) error
	// Close releases the pod's network once none of its processes runs
	// any more. A second Close does nothing.
	Close() error
}

// Loopback is n as a Network: the pods share the host's network, each
// with an address of its own from a loopback range, which its programs
// bind. There is nothing to enter, and a port bound on every address
// (0.0.0.0) is taken for all pods: the agent checks a container's ports
// before it starts (loopnet.Owners).
func Loopback(n *loopnet.Network) Network { return loopback{n} }

type loopback struct{ n *loopnet.Network }

func (l loopback) Add(podKey string) (Pod, error) {
	p, err := l.n.Add(podKey)
	if err != nil {
		return nil, err
	}
	return p, nil
}

func (l loopback) Capacity() (int, netip.Prefix) { return l.n.Capacity() }
