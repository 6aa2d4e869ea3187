package controllers

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/local/objstore"
)

// BenchmarkEndpointsPodWrite is one pod status write (its readiness
// flipping) seen by the controller of 50 single-pod workloads, each pod
// ready: what every readiness change of `podgate run -f` with 50 pods
// costs in EndpointSlice work.
func BenchmarkEndpointsPodWrite(b *testing.B) {
	const pods = 50
	var sb strings.Builder
	for i := range pods {
		fmt.Fprintf(&sb, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p%d}\nspec:\n  containers:\n  - {name: app, image: busybox, ports: [{containerPort: 8080}]}\n", i)
	}
	m, err := workload.Load(strings.NewReader(sb.String()), "bench.yaml")
	if err != nil {
		b.Fatal(err)
	}
	e, err := NewEndpoints(EndpointsConfig{Store: objstore.New(objstore.Options{}), Workloads: m.Workloads})
	if err != nil {
		b.Fatal(err)
	}
	for i := range pods {
		p := podState{name: "p" + strconv.Itoa(i), ip: fmt.Sprintf("127.0.1.%d", i+1), ready: true}.pod()
		p.ResourceVersion = "1"
		e.PodWritten(p)
	}
	rv := 1
	b.ReportAllocs()
	for b.Loop() {
		rv++
		p := podState{name: "p0", ip: "127.0.1.1", ready: rv%2 == 0}.pod()
		p.ResourceVersion = strconv.Itoa(rv)
		e.PodWritten(p)
	}
}
