// Package servingv1 is Knative Serving's Service (serving.knative.dev/v1)
// as `podgate run` serves it: the object its store keeps, its controllers
// report on in the status, and `podgate get services` and the lab read. It
// is the API's side of a Service, with the spec kept as given; the
// manifest side, with the spec typed and defaulted, is package
// admission/workload's.
package servingv1
