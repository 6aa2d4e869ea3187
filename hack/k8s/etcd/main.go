// Command etcd is etcd's server, built from the Go module proxy: `go install
// go.etcd.io/etcd/server/v3@…` refuses because etcd's module has replace
// directives, so this module requires it and calls its entry point.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
