// Command podgate-testapp is the test app on its own (image
// ghcr.io/podgate/testapp), for images that should not carry all of podgate.
// `podgate testapp` is the same app with the same flags.
package main

import (
	"os"

	"github.com/podgate/podgate/test/testapp"
)

// main exits 0 after a clean termination, 1 when the app fails (e.g. its
// port is taken), 2 for usage errors: see testapp.Main.
func main() { os.Exit(testapp.Main(os.Args[1:])) }
