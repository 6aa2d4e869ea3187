package lab

import (
	"regexp"
)

// What `podgate run` prints on stderr once it is up (packages local and
// activator/server): the control API line first, then, after the pods were
// started, one curl line per front door route.
var (
	apiLine   = regexp.MustCompile(`podgate: control API on http://(127(?:\.\d+){3}:\d+)`)
	doorLine  = regexp.MustCompile(`podgate: front door on http://(127(?:\.\d+){3}:\d+)`)
	routeLine = regexp.MustCompile(`podgate: curl -H 'Host: ([^']+)' http://(127(?:\.\d+){3}:\d+)/`)
)

// addresses is what a started podgate told about itself.
type addresses struct {
	api    string
	door   string
	routes []string // hosts, in the order printed
}

// parseAddresses reads the startup lines from stderr text. complete is
// true once the front door and its routes were printed (the routes follow
// the front door line in one write burst, but a reader may see them split:
// the caller keeps reading until the process says more or exits).
func parseAddresses(stderr string) (a addresses, complete bool) {
	if m := apiLine.FindStringSubmatch(stderr); m != nil {
		a.api = m[1]
	}
	if m := doorLine.FindStringSubmatch(stderr); m != nil {
		a.door = m[1]
	}
	for _, m := range routeLine.FindAllStringSubmatch(stderr, -1) {
		a.routes = append(a.routes, m[1])
	}
	return a, a.api != "" && a.door != ""
}
