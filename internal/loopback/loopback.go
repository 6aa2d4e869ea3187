// Package loopback is the rule for podgate's servers that have no
// authentication (the control API, which can delete pods; the front door;
// its metrics): they listen on a loopback address only. One check, so
// every flag and every listener says the same.
package loopback

import (
	"errors"
	"fmt"
	"net"
	"strconv"
)

// Check checks that addr is HOST:PORT with HOST a loopback address
// (127.0.0.0/8, ::1, or localhost) and PORT a number from 0 (any free
// port) to 65535, and returns it with localhost spelled 127.0.0.1. The
// error does not repeat addr: the caller names it with its flag.
func Check(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", errors.New("want HOST:PORT on loopback")
	}
	if host == "localhost" {
		host = "127.0.0.1"
	}
	switch ip := net.ParseIP(host); {
	case host == "":
		return "", errors.New("an empty host listens on every interface; it has no authentication, so it listens on loopback only (127.0.0.0/8 or ::1)")
	case ip == nil || !ip.IsLoopback():
		return "", fmt.Errorf("%s is not a loopback address; it has no authentication, so it listens on loopback only (127.0.0.0/8 or ::1)", host)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", fmt.Errorf("port %q must be a number from 0 (any free port) to 65535", port)
	}
	return net.JoinHostPort(host, port), nil
}
