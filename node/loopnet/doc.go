// Package loopnet is the loopback pod network of `podgate run`: the pods
// share the host's network, each with an address of its own from a
// loopback range (127.0.1.N by default), which its programs bind. It
// hands out those addresses as a CNI's host-local IPAM does (New,
// Network.Add), and, since a program that binds 0.0.0.0 takes a port for
// every pod, it checks a container's ports before it starts and names
// whoever holds one (Owners.CheckPorts, PortConflictError).
//
// Package node/podnetwork adapts Network to the node agent's pod
// network contract (podnetwork.Loopback); it is the agent's default
// network.
package loopnet
