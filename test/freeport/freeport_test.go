package freeport

import (
	"net"
	"strconv"
	"testing"
)

func TestPortsComeFromBelowTheEphemeralRangeAndBind(t *testing.T) {
	top := ephemeralLow()
	for _, pick := range []struct {
		name string
		port func(testing.TB, string) int
	}{{"tcp", Port}, {"tcp and udp", TCPAndUDP}} {
		t.Run(pick.name, func(t *testing.T) {
			p := pick.port(t, "127.0.0.1")
			if p < lowest || p >= top {
				t.Fatalf("port %d, want one in [%d, %d)", p, lowest, top)
			}
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				t.Fatalf("port %d does not bind: %v", p, err)
			}
			ln.Close()
		})
	}
}

func TestATakenPortIsNotHandedOut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	if freeTCP(addr) {
		t.Fatalf("%s is listened on, yet freeTCP says it is free", addr)
	}
}
