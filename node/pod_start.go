package node

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/node/events"
	"github.com/podgate/podgate/node/images"
	"github.com/podgate/podgate/node/logbuf"
	"github.com/podgate/podgate/node/proc"
)

// startContainer starts a new instance of c, with the kubelet's events:
// Pulled, Created, Started (or Failed).
func (p *pod) startContainer(c *container) {
	a := p.a
	now := a.clock.Now()
	c.hist.Start()
	c.id = newContainerID()
	p.record(c, corev1.EventTypeNormal, events.ReasonPulled,
		fmt.Sprintf("Container image %q already present on machine", c.spec.Image))

	if a.loopback {
		// In a network of its own a pod owns every port; on loopback a
		// port bound on 0.0.0.0 is taken for all pods.
		if err := a.owners.CheckPorts(p.namespace+"/"+p.name, c.name, p.ip, c.spec.Ports); err != nil {
			p.startFailed(c, err)
			return
		}
	}
	pathEnv, _ := c.cfg.Env.Get("PATH")
	path, err := images.LookPath(c.cfg.Argv[0], c.cfg.Dir, pathEnv)
	if err != nil {
		// Already "exec: \"NAME\": …", what runc reports to the kubelet.
		p.startFailed(c, err)
		return
	}

	logs := c.output.Next(a.opts.LogBytes)
	prefix := p.name + "/" + c.name + " | "
	c.stdout = logbuf.NewLineWriter(prefix, a.out, logs, a.clock.Now)
	c.stderr = logbuf.NewLineWriter(prefix, a.out, logs, a.clock.Now)

	for _, w := range c.sec.Warnings {
		p.record(c, corev1.EventTypeWarning, events.ReasonSecurityContextNotEnforced, w)
	}
	sec, err := p.security(c)
	if err != nil {
		logs.End()
		p.startFailed(c, err)
		return
	}
	p.record(c, corev1.EventTypeNormal, events.ReasonCreated, "Created container: "+c.name)
	pr, err := a.sup.Start(proc.Spec{
		Path: path, Args: c.cfg.Argv, Env: c.cfg.Env.Strings(), Dir: c.cfg.Dir,
		Stdout: c.stdout, Stderr: c.stderr,
		Enter:    p.enter(),
		Security: sec,
	})
	if err != nil {
		logs.End()
		p.startFailed(c, err)
		return
	}
	a.owners.Add(pr.Pid, fmt.Sprintf("pod %s/%s container %s", p.namespace, p.name, c.name))
	c.proc, c.running, c.startedAt = pr, true, now
	p.record(c, corev1.EventTypeNormal, events.ReasonStarted, "Started container "+c.name)
	p.mgr.ContainerStarted(c.name, c.id, now)
	c.started, c.ready = p.mgr.Started(c.name), p.mgr.Ready(c.name)

	id, stdout, stderr := c.id, c.stdout, c.stderr
	p.tasks.Add(1)
	go func() {
		defer p.tasks.Done()
		<-pr.Done()
		stdout.Flush()
		stderr.Flush()
		p.post(evExited{c: c, id: id, exit: pr.Exit()})
	}()
}

// startFailed records an instance that could not be started. Like a
// container runtime's, it counts as an instance that exited at once with
// code 128 and reason StartError, and restarts with the usual backoff.
func (p *pod) startFailed(c *container, err error) {
	now := metav1.NewTime(p.a.clock.Now())
	p.record(c, corev1.EventTypeWarning, events.ReasonFailed, "Error: "+err.Error())
	p.a.log.Error("container failed to start", "pod", p.namespace+"/"+p.name, "container", c.name, "err", err)
	p.afterTermination(c, corev1.ContainerStateTerminated{
		ExitCode: 128, Reason: "StartError", Message: err.Error(),
		StartedAt: now, FinishedAt: now, ContainerID: c.containerID(),
	}, false)
}

// security is what c's process gives up, with its volume mounts when the
// node mounts volumes: binds after the DNS files', writable unless
// readOnly (so no Writable paths: a mount path is the volume, not this
// machine's path).
func (p *pod) security(c *container) (*proc.Security, error) {
	if p.vols == nil {
		return c.sec.Security, nil
	}
	binds, err := p.vols.Mounts(c.spec)
	if err != nil {
		return nil, err
	}
	sec := proc.Security{}
	if c.sec.Security != nil {
		sec = *c.sec.Security
	}
	sec.Binds = append(slices.Clone(sec.Binds), binds...)
	sec.Writable = nil
	return &sec, nil
}
