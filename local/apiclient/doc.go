// Package apiclient is the CLI's client of the control API of a running
// `podgate run` (package api serves it): lists, gets, watches, pod
// deletion and logs, with the server's errors as apimachinery StatusErrors
// and an UnreachableError when nothing answers. Anything client-go does
// works against the same API; this client is what `podgate get`, `delete`
// and `logs` need, without client-go's weight.
package apiclient
