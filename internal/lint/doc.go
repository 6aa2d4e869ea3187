// Package lint holds the module's own rules about its code, checked by
// tests over the source: the layout (which part may import which, one
// statement of the rules from which docs/architecture.md's tables are
// generated), and that no production function is longer than
// maxBodyLines unless its doc comment says why ("long because …"). It has
// no code to import; `go test ./internal/lint` is the check.
package lint
