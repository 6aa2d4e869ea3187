// Package objstore is podgate's in-memory object store: the part of a
// Kubernetes API server that the local node agent writes into and the
// control API (and in-process consumers such as the gate's status source)
// read and watch.
//
// It holds a few kinds (Pods, Events, EndpointSlices, Knative Services),
// each in its own typed Collection keyed by namespace/name. The behaviour
// follows the API server's where a client can tell the difference:
//
//   - Every write stamps metadata.resourceVersion from one counter shared by
//     all collections of a Store (like etcd's revision), so versions only grow
//     and a list's version is a valid starting point for a watch.
//   - Create fills metadata.uid and metadata.creationTimestamp, honours
//     metadata.generateName, and refuses a name that exists (409
//     AlreadyExists). Update refuses a stale resourceVersion (409 Conflict);
//     an update that changes nothing is a no-op: no new version, no event
//     (so a status loop that rewrites the same status does not flood
//     watchers). Errors are apimachinery StatusErrors, so callers use
//     apierrors.IsNotFound and friends and the API serves them as they are.
//   - Objects are deep-copied on the way in and on the way out: a caller can
//     never change what is stored, nor what another watcher sees.
//   - Watch(ctx, rv) delivers ADDED/MODIFIED/DELETED in version order. With
//     rv "" or "0" it first replays the current objects as ADDED (the API
//     server's "get state and start at most recent"); with a version it
//     replays what happened after it from a bounded history, or fails with
//     410 Expired ("too old resource version") when that history is gone.
//
// Writers never block on readers. Each watcher has a bounded buffer; a
// watcher that falls more than WatchBuffer events behind is dropped: it
// receives one ERROR event carrying a 410 Expired Status and its channel is
// closed, exactly what a client of the API server handles by listing again
// and watching from the list's version. The store starts no goroutines.
package objstore
