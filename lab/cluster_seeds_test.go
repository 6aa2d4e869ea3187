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

// onCluster is a namespace of a cluster of `podgate cluster up`: the
// scenario's manifest applied there with kubectl, as Deployments and
// Services opted in to podgate's gate (manifest.Manifest.ForCluster).
type onCluster struct {
	c  *kubelab.Cluster
	ns string
}

func (o onCluster) start(t *testing.T, m *manifest.Manifest, _ string, replicas int) lab.World {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	ns, err := o.c.Namespace(ctx, o.ns)
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.Apply(ctx, m, replicas); err != nil {
		_ = ns.Stop(waitTimeout)
		t.Fatal(err)
	}
	return ns
}

// The seven seed scenarios Kubernetes users meet, on one real cluster
// (the control plane of v1.37.2, podgate's node, podgate installed by
// cluster up: webhook, activator, node status service), each in
// a namespace of its own, through the cluster's front door: the same
// steps and verdicts as under podgate run, but for what the cluster
// does not have — a request timeout per workload (TimesOutHeldRequests)
// and Knative's Service status (the EndpointSlices and the gates'
// conditions say it instead).
func TestSeedsOnACluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	begin := time.Now()
	c, err := kubelab.Start(ctx, kubelab.Config{Binary: podgateBin, Dir: filepath.Join(t.TempDir(), "cluster"), PodCIDR: "10.250.60.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster up to front door ready: %s", time.Since(begin).Round(time.Millisecond))
	t.Cleanup(func() {
		stopped := time.Now()
		code, err := c.Stop(2 * time.Minute)
		if err != nil || code != 0 {
			t.Errorf("cluster up after SIGINT: exit %d, %v\nstderr:\n%s", code, err, c.Stderr())
		}
		t.Logf("cluster stopped in %s", time.Since(stopped).Round(time.Millisecond))
	})
	for _, seed := range []struct {
		name, ns string
		run      func(*testing.T, place)
	}{
		{"exec readiness holds traffic and the status says so", "exec-readiness", seedExecReadiness},
		{"exec liveness restarts the container and loses no request", "exec-liveness", seedExecLiveness},
		{"sidecar liveness restarts each container and loses no request", "multi-liveness", seedMultiContainerLiveness},
		{"a sidecar never ready gets no traffic", "sidecar-never-ready", seedSidecarNeverReady},
		{"a sidecar that turns unready stops traffic", "sidecar-unready", seedSidecarTurnsUnready},
		{"a sidecar's exec readiness is accepted and enforced", "sidecar-exec", seedSidecarExecReadiness},
		{"deleting a pod under load loses no request", "delete-under-load", seedDeletePodUnderLoad},
	} {
		t.Run(seed.name, func(t *testing.T) {
			t.Parallel()
			seed.run(t, onCluster{c: c, ns: seed.ns})
		})
	}
}
