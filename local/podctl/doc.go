// Package podctl is the client side of `podgate get`, `podgate delete` and
// `podgate logs` against the control API of a running `podgate run`: the
// rules kubectl applies to their arguments (resource types and their
// aliases, TYPE/NAME, selectors, --grace-period with --now and --force),
// what they fetch through client-go (Client), and what they print (package
// printers, kubectl's tables). The command only turns flags into a
// request; a request that breaks the rules is a UsageError.
package podctl
