package lab_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/podgate/podgate/lab"
	"github.com/podgate/podgate/lab/kubelab"
	"github.com/podgate/podgate/lab/manifest"
)

// onKnative is a namespace of a cluster of `podgate cluster up
// --knative`: the scenario's Knative Services applied as they are, in a
// namespace opted in to podgate, requests through Knative's ingress and
// the path burst says.
type onKnative struct {
	c    *kubelab.Cluster
	ns   string
	path kubelab.Path
}

// knativeWorld is the Knative namespace, whose held requests these seeds
// do not time: a request the gate held and then handed to Knative's
// activator may end in the gate's own 504 or the activator's, whichever
// time limit (both the revision's, each from its own start) ends first.
type knativeWorld struct{ *kubelab.KnativeNamespace }

func (knativeWorld) TimesOutHeldRequests() bool { return false }

func (o onKnative) start(t *testing.T, m *manifest.Manifest, _ string, replicas int) lab.World {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	ns, err := o.c.KnativeNamespace(ctx, o.ns)
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.Apply(ctx, m, replicas, o.path, true); err != nil {
		t.Log(ns.Logs())
		_ = ns.Stop(waitTimeout)
		t.Fatal(err)
	}
	return knativeWorld{ns}
}

// The seed scenarios on real Knative Serving (v0.50.0: controller,
// webhook, autoscaler, activator; Traefik as its ingress; kube-proxy and
// CoreDNS), podgate's gate as every revision's queue container and
// adopted by podgate's webhook, each scenario in a namespace of its own
// on one cluster, once with Knative's activator in the path of every
// request (target-burst-capacity -1) and once without it (0: the ingress
// sends straight to the pods): the same steps and verdicts as under
// podgate run.
//
// Left out: the sidecar that is never ready. Knative routes a revision
// only once it has been Ready, so with either queue sidecar its requests
// get the ingress's 404 and none reaches the pod (docs/knative.md).
func TestSeedsOnKnative(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	begin := time.Now()
	c, err := kubelab.Start(ctx, kubelab.Config{Binary: podgateBin, Dir: filepath.Join(t.TempDir(), "cluster"), PodCIDR: "10.250.62.0/24", Knative: "gate"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster up to Knative's ingress ready: %s", time.Since(begin).Round(time.Millisecond))
	t.Cleanup(func() {
		stopped := time.Now()
		code, err := c.Stop(2 * time.Minute)
		if err != nil || code != 0 {
			t.Errorf("cluster up after SIGINT: exit %d, %v\nstderr:\n%s", code, err, c.Stderr())
		}
		t.Logf("cluster stopped in %s", time.Since(stopped).Round(time.Millisecond))
	})
	for _, path := range []struct {
		name string
		path kubelab.Path
	}{
		{"through the activator", kubelab.ThroughActivator},
		{"ingress to the pods", kubelab.ThroughIngress},
	} {
		for _, seed := range []struct {
			name, ns string
			run      func(*testing.T, place)
		}{
			{"exec readiness holds traffic and the status says so", "exec-readiness", seedExecReadiness},
			{"exec liveness restarts the container and loses no request", "exec-liveness", seedExecLiveness},
			{"sidecar liveness restarts each container and loses no request", "multi-liveness", seedMultiContainerLiveness},
			{"a sidecar that turns unready stops traffic", "sidecar-unready", seedSidecarTurnsUnready},
			{"a sidecar that turns unready: the other pod answers", "sidecar-unready-two", seedSidecarUnreadyOtherPodAnswers},
			{"a sidecar's exec readiness is accepted and enforced", "sidecar-exec", seedSidecarExecReadiness},
			{"deleting a pod under load loses no request", "delete-under-load", seedDeletePodUnderLoad},
		} {
			t.Run(path.name+"/"+seed.name, func(t *testing.T) {
				t.Parallel()
				seed.run(t, onKnative{c: c, ns: seed.ns + "-" + string(path.path), path: path.path})
			})
		}
	}
}
