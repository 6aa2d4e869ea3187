package local

import (
	"errors"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/node"
	"github.com/podgate/podgate/node/loopnet"
)

// gatePorts are the ports every local gate binds on its pod's address.
var gatePorts = []struct {
	port int32
	what string
}{
	{contract.GatePort, "traffic and health"},
	{contract.GateAdminPort, "admin"},
	{contract.GateAutoscalerPort, "autoscaler statistics"},
	{contract.GateMetricsPort, "metrics"},
}

// claimPodRange checks, before anything starts, what would otherwise
// surface later as every gate crash-looping: another podgate run on the
// same --pod-cidr (its pods would get the same addresses), and a program
// bound on 0.0.0.0 to a port every gate needs. The range stays claimed
// until the closer on the stack closes.
func (r *run) claimPodRange(stack *closers) error {
	cidr := r.cfg.PodCIDR
	if cidr == "" {
		cidr = node.DefaultPodCIDR
	}
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil {
		return fmt.Errorf("--pod-cidr %q: %w", cidr, err)
	}
	claim, err := loopnet.ClaimRange(prefix)
	var inUse *loopnet.RangeInUseError
	if errors.As(err, &inUse) {
		return fmt.Errorf("--pod-cidr %s: in use by %s, another 'podgate run' or 'podgate node' on this range: its pods would get the same addresses; choose another --pod-cidr", cidr, inUse.Holder)
	}
	if err != nil {
		return err
	}
	stack.push(claim.Close)
	if r.cfg.NoGate {
		return nil
	}
	return checkGatePorts(prefix.Masked().Addr().Next())
}

// checkGatePorts binds each gate port on the range's first pod address for
// a moment. A program that binds 0.0.0.0 (or an overlapping range's pod)
// holds the port on every pod address, and every gate would fail to start.
func checkGatePorts(ip netip.Addr) error {
	var owners loopnet.Owners
	for _, p := range gatePorts {
		err := owners.CheckPorts("", "gate", ip, []corev1.ContainerPort{{ContainerPort: p.port}})
		var conflict *loopnet.PortConflictError
		if errors.As(err, &conflict) {
			return fmt.Errorf("the gate's %s port %d is taken on the first pod address %s by %s: every pod's gate listens on ports %d, %d, %d and %d of its own address, and a program bound on 0.0.0.0 (or another podgate run on an overlapping --pod-cidr) holds them for every pod; stop it, choose another --pod-cidr, or run without gates (--no-gate)",
				p.what, p.port, ip, conflict.Owner, contract.GatePort, contract.GateAdminPort, contract.GateAutoscalerPort, contract.GateMetricsPort)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
