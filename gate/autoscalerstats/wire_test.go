package autoscalerstats

import (
	"bytes"
	"math"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// TestStatWireFormatIsKnatives pins the bytes the autoscaler decodes,
// written by hand from stat.proto's field numbers and types, so a
// regenerated stat.pb.go (or an edited .proto) cannot drift from
// Knative's wire format unnoticed.
func TestStatWireFormatIsKnatives(t *testing.T) {
	var want []byte
	want = protowire.AppendTag(want, 1, protowire.BytesType) // pod_name
	want = protowire.AppendString(want, "hello-00001-deployment-abc")
	for _, f := range []struct {
		num protowire.Number
		v   float64
	}{
		{2, 2.25}, // average_concurrent_requests
		{3, 1},    // average_proxied_concurrent_requests
		{4, 3},    // request_count
		{5, 1},    // proxied_request_count
		{6, 12.5}, // process_uptime
	} {
		want = protowire.AppendTag(want, f.num, protowire.Fixed64Type)
		want = protowire.AppendFixed64(want, math.Float64bits(f.v))
	}
	want = protowire.AppendTag(want, 7, protowire.VarintType) // timestamp
	want = protowire.AppendVarint(want, 1764324000)

	got, err := proto.MarshalOptions{Deterministic: true}.Marshal(&Stat{
		PodName: "hello-00001-deployment-abc", AverageConcurrentRequests: 2.25, AverageProxiedConcurrentRequests: 1,
		RequestCount: 3, ProxiedRequestCount: 1, ProcessUptime: 12.5, Timestamp: 1764324000,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("Stat marshals to\n %x\nwant\n %x", got, want)
	}
	// The autoscaler reads at most 6*10+256+20 bytes: a pod name at
	// Kubernetes' longest (253) fits with every field set.
	long := &Stat{PodName: string(bytes.Repeat([]byte("a"), 253)), AverageConcurrentRequests: 1, AverageProxiedConcurrentRequests: 1,
		RequestCount: 1, ProxiedRequestCount: 1, ProcessUptime: 1, Timestamp: math.MaxInt64}
	if n := proto.Size(long); n > 6*10+256+20 {
		t.Errorf("a Stat with a 253-byte pod name is %d bytes, over the autoscaler's 336", n)
	}
}
