package loopnet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	corev1 "k8s.io/api/core/v1"
)

// PortConflictError says a container port is taken. Locally every pod has
// its own address, so a conflict means a program bound the port on every
// address (0.0.0.0) — another replica of the same container, typically —
// or on this pod's address.
type PortConflictError struct {
	Pod, Container string // the container that wanted the port
	Port           int32
	Protocol       corev1.Protocol
	Addr           string // where podgate tried to bind it
	// Owner describes who holds it: "pod default/web-1 container app",
	// "another process (pid 42, python3)", or "another process".
	Owner string
}

func (e *PortConflictError) Error() string {
	return fmt.Sprintf("port %d/%s of pod %s container %s is already bound by %s (podgate tried %s; a program that binds 0.0.0.0 takes the port for every pod: bind $POD_IP instead)",
		e.Port, e.Protocol, e.Pod, e.Container, e.Owner, e.Addr)
}

// Owners maps the process groups podgate started to their containers,
// to name the owner of a port. The zero value is ready to use.
type Owners struct {
	mu     sync.Mutex
	groups map[int]string // pgid → "pod NS/NAME container C"
}

// Add records that the process group pgid is who ("pod NS/NAME container C").
func (o *Owners) Add(pgid int, who string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.groups == nil {
		o.groups = map[int]string{}
	}
	o.groups[pgid] = who
}

// Remove forgets the process group pgid once it is gone.
func (o *Owners) Remove(pgid int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.groups, pgid)
}

func (o *Owners) lookup(pgid int) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	who, ok := o.groups[pgid]
	return who, ok
}

// CheckPorts binds each declared port of the container on its pod IP for a
// moment. The kubelet has no such check (each pod has a network namespace
// of its own); locally the error would otherwise surface as the program's
// own "address already in use", with no word about who holds the port.
// A port taken is a *PortConflictError.
func (o *Owners) CheckPorts(pod, container string, ip netip.Addr, ports []corev1.ContainerPort) error {
	for _, p := range ports {
		if p.ContainerPort <= 0 {
			continue
		}
		proto := p.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		addr := net.JoinHostPort(ip.String(), strconv.Itoa(int(p.ContainerPort)))
		var err error
		switch proto {
		case corev1.ProtocolTCP:
			var ln net.Listener
			if ln, err = net.Listen("tcp4", addr); err == nil {
				ln.Close()
			}
		case corev1.ProtocolUDP:
			var pc net.PacketConn
			if pc, err = net.ListenPacket("udp4", addr); err == nil {
				pc.Close()
			}
		default:
			continue // SCTP: nothing to check with
		}
		if err == nil {
			continue
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("port %d/%s of pod %s container %s: %w", p.ContainerPort, proto, pod, container, err)
		}
		return &PortConflictError{
			Pod: pod, Container: container, Port: p.ContainerPort, Protocol: proto, Addr: addr,
			Owner: o.ownerOf(ip, int(p.ContainerPort), proto),
		}
	}
	return nil
}

// ownerOf finds the process holding port through /proc: the socket's
// inode from /proc/net, the process from its fd table, and the pod from
// the process's group. Where /proc says nothing (other OS, other user),
// the owner is "another process".
func (o *Owners) ownerOf(ip netip.Addr, port int, proto corev1.Protocol) string {
	inodes := socketInodes(ip, port, proto)
	if len(inodes) == 0 {
		return "another process"
	}
	pid := pidWithSocket(inodes)
	if pid <= 0 {
		return "another process"
	}
	pgid, comm := procGroupAndName(pid)
	if who, ok := o.lookup(pgid); ok {
		return who
	}
	if comm != "" {
		return fmt.Sprintf("another process (pid %d, %s)", pid, comm)
	}
	return fmt.Sprintf("another process (pid %d)", pid)
}

// socketInodes lists the inodes of sockets that keep ip:port from being
// bound: listening TCP sockets, or any UDP socket, on that port and on ip
// itself or a wildcard address. Another pod's or process's socket on the
// same port but another loopback address is not in the way.
func socketInodes(ip netip.Addr, port int, proto corev1.Protocol) map[string]bool {
	files := []string{"/proc/net/tcp", "/proc/net/tcp6"}
	if proto == corev1.ProtocolUDP {
		files = []string{"/proc/net/udp", "/proc/net/udp6"}
	}
	want := fmt.Sprintf(":%04X", port)
	out := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			fs := strings.Fields(line)
			if len(fs) < 10 || !strings.HasSuffix(fs[1], want) || !blocks(strings.TrimSuffix(fs[1], want), ip) {
				continue
			}
			if proto == corev1.ProtocolTCP && fs[3] != "0A" { // TCP_LISTEN
				continue
			}
			if fs[9] != "0" {
				out[fs[9]] = true
			}
		}
	}
	return out
}

// blocks reports whether a socket bound to the local address hexIP (as
// /proc/net writes it: each 32-bit word in host byte order) keeps ip from
// being bound on the same port: the same address, or a wildcard.
func blocks(hexIP string, ip netip.Addr) bool {
	if strings.Trim(hexIP, "0") == "" {
		return true // 0.0.0.0 or ::
	}
	if !ip.Is4() {
		return false
	}
	// IPv4 sockets in /proc/net/tcp, and IPv4-mapped ones in tcp6.
	return hexIP == procHex(ip.AsSlice()) || hexIP == procHex(netip.AddrFrom16(ip.As16()).AsSlice())
}

// procHex writes an address the way /proc/net/{tcp,udp}[6] does.
func procHex(b []byte) string {
	var sb strings.Builder
	for i := 0; i+4 <= len(b); i += 4 {
		fmt.Fprintf(&sb, "%08X", binary.NativeEndian.Uint32(b[i:i+4]))
	}
	return sb.String()
}

func pidWithSocket(inodes map[string]bool) int {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range procs {
		fds, err := os.ReadDir(filepath.Join(dir, "fd"))
		if err != nil {
			continue
		}
		for _, fd := range fds {
			target, err := os.Readlink(filepath.Join(dir, "fd", fd.Name()))
			if err != nil {
				continue
			}
			if inode, ok := strings.CutPrefix(target, "socket:["); ok && inodes[strings.TrimSuffix(inode, "]")] {
				pid, _ := strconv.Atoi(filepath.Base(dir))
				return pid
			}
		}
	}
	return 0
}

// procGroupAndName reads the process group and command name of pid.
func procGroupAndName(pid int) (int, string) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, ""
	}
	s := string(data)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return 0, ""
	}
	comm := s[open+1 : end]
	fs := strings.Fields(s[end+1:])
	// After the name: state, ppid, pgrp.
	if len(fs) < 3 {
		return 0, comm
	}
	pgid, _ := strconv.Atoi(fs[2])
	return pgid, comm
}
