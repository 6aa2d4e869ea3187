// Package node is podgate's node agent, the kubelet's part and nothing
// else: it runs the pods bound to its node as processes on this machine,
// with the kubelet's lifecycle (docs/facts.md §2–3), and reports pod
// status and events. Who plays the API server is not its concern: it
// learns of its pods through a PodSource and writes through a PodWriter,
// interfaces of its own (docs/architecture.md). For `podgate run` they
// are package local/controllers', over the embedded store.
//
// The pieces, each in its own file:
//
//   - Agent (agent.go): options, CheckPod (what would keep a pod from
//     starting here, asked before `podgate run` starts any), graceful shutdown
//     (the drain of its pod workers, node/podworkers); it implements
//     apiserver.LogSource (api.go).
//   - node.go: the interfaces to the API, and what the agent does with
//     what it observes (node/podwatch tells what is news): a new pod
//     gets a worker, a deletion (the API's deletionTimestamp) starts
//     termination, a removal kills at once.
//   - pod (pod*.go): one goroutine per pod, the kubelet's pod worker. It
//     alone changes the pod's state; process exits, probe results,
//     timers and deletions reach it through a queue. It decides by the
//     clock-free rules of node/startorder (init containers in order,
//     native sidecars each gated on its startup probe), node/restart
//     (restartPolicy, the container's restart history) and
//     node/termination (the shared grace period; sidecars stop after
//     the main containers, in reverse order), and publishes the status
//     node/podstatus computes.
//   - probes: one prober.Manager per pod over one shared probe.Runner
//     (node/podprobes wires them).
//   - network.go: PodNetwork (node/podnetwork's contract), each pod's
//     address and the network its processes start in (containers, exec
//     probes, exec hooks, through PodNet.Enter); the default is loopback
//     addresses on the host (node/loopnet, which also checks a
//     container's ports before it starts). Package node/netns/nodenet adapts
//     pod network namespaces.
//   - pod_dns.go: a hostNetwork pod's network, the node's own (its IP the
//     node's); each pod's /etc/resolv.conf and /etc/hosts as the kubelet
//     composes them (node/poddns, from the kubelet's --cluster-dns,
//     --cluster-domain and --resolv-conf), written for the pod and bound
//     over those paths for each of its containers (proc.Security.Binds).
//   - volumes: on a pod network with the node root, each pod's volumes
//     (node/volumes: configMap, secret, projected, downwardAPI, emptyDir,
//     hostPath) set up before its containers start (a failure is
//     FailedMount, tried again), written again every
//     Options.VolumeResync, and bound at each container's mount paths in
//     its process's mount namespace (podsetup.go, pod_start.go).
//   - prepare.go: each container resolved (node/containerconfig) and its
//     securityContext decided (node/seccontext): the user, groups,
//     capabilities, no_new_privs and read-only view its process gets
//     (proc.Security), the kubelet's runAsNonRoot refusal, and a warning
//     event for each field the node does not enforce.
//   - image pulls: a container without a command whose image the node
//     cannot run (images.Map.Present) waits as a kubelet's does for an
//     image it cannot pull — ErrImagePull, ImagePullBackOff or
//     ErrImageNeverPull, with the kubelet's events — looked at again
//     every 10 s (node/imagepull; pod.go's lookForImage).
//
// The other subpackages are the parts the pod worker uses: node/proc (a
// process group per container, parent-death signal and a guardian process
// so nothing outlives podgate; what a process gives up before it runs), node/kill (one container's stop
// sequence), node/queue (the pod worker's mailbox), node/backoff
// (CrashLoopBackOff, the image pull back-off), node/events (the event recorder, reasons),
// node/logbuf and node/podlogs (the output kept, and read as `kubectl
// logs` does), node/containerconfig with node/env and node/images
// (what a container runs with), node/hooks (lifecycle handlers)
// and node/podsetup (what a node adds to a pod); docs/architecture.md
// lists each with its job.
//
// Where podgate deliberately differs from the kubelet it is in the user's
// favour and said in docs/running.md; the main one: when a liveness or
// startup probe fails at its threshold, the container is marked not ready
// and the pod's status is written *before* the kill starts (docs/facts.md
// §3, seed 004); the local control plane turns the endpoint not ready
// before that write returns, so traffic leaves before SIGTERM arrives.
package node
