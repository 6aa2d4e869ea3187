// Package autoscalerstats is what Knative's autoscaler scrapes from every
// pod's queue sidecar: the average concurrency and the requests per second
// of the last reporting period, as one protobuf Stat (stat.proto, Knative
// Serving's published definition) on port 9090, path /metrics.
//
// It follows Knative Serving v0.50.0's queue-proxy:
//
//   - the averages are time-weighted over the reporting period (1 s): a
//     request in flight for half the period adds 0.5 to the average
//     concurrency;
//   - a request counts as proxied when its K-Proxy-Request header is
//     "activator" (the activator sent it); proxied requests count in the
//     totals too;
//   - request_count is the period's requests divided by its length in
//     seconds;
//   - process_uptime is the seconds since the gate started, pod_name is
//     SERVING_POD, and timestamp is left 0 (queue-proxy never sets it; the
//     autoscaler stamps what it scrapes itself);
//   - the answer is always protobuf with Content-Type application/protobuf,
//     whatever the request's Accept header says, for any method on /metrics
//     (queue-proxy does no content negotiation; the autoscaler sends Accept:
//     application/protobuf and rejects any other Content-Type);
//   - until the first report the Stat holds only the pod name.
//
// Which requests count is the caller's: the gate counts every request it
// proxies (health checks and network probes are answered, not counted), as
// queue-proxy counts every request that passes its drainer.
//
// Counting a request takes a mutex twice (arrival, end) and allocates
// nothing; the Stat is marshalled once per period and served as bytes.
package autoscalerstats

// stat.proto is copied verbatim from knative.dev/serving v0.50.0
// (pkg/autoscaler/metrics/stat.proto, Apache-2.0). stat.pb.go is generated
// from it and committed; regenerating needs protoc on the PATH (Debian's
// protobuf-compiler package), protoc-gen-go comes from go.mod's tool line:
//
//	go generate ./gate/autoscalerstats/
//
//go:generate sh -c "protoc --plugin=protoc-gen-go=$(go tool -n protoc-gen-go) -I../.. --go_out=../.. --go_opt=paths=source_relative --go_opt=Mgate/autoscalerstats/stat.proto=github.com/podgate/podgate/gate/autoscalerstats ../../gate/autoscalerstats/stat.proto"
