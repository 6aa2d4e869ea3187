//go:build linux

package nodenet_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// dnsServer is a cluster DNS server for the tests: on UDP port 53 of
// addr, it answers A questions for the names of records, NXDOMAIN for
// any other name, and keeps every name it was asked.
type dnsServer struct {
	conn    net.PacketConn
	records map[string]netip.Addr // by FQDN with its final dot
	asked   chan string
	done    chan struct{}
}

func startDNS(addr netip.Addr, records map[string]netip.Addr) (*dnsServer, error) {
	conn, err := net.ListenPacket("udp", netip.AddrPortFrom(addr, 53).String())
	if err != nil {
		return nil, fmt.Errorf("the test's DNS server: %w", err)
	}
	s := &dnsServer{conn: conn, records: records, asked: make(chan string, 1000), done: make(chan struct{})}
	go s.serve()
	return s, nil
}

func (s *dnsServer) Close() {
	_ = s.conn.Close()
	<-s.done
}

func (s *dnsServer) serve() {
	defer close(s.done)
	buf := make([]byte, 1500)
	for {
		n, from, err := s.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		if resp, err := s.answer(buf[:n]); err == nil {
			_, _ = s.conn.WriteTo(resp, from)
		}
	}
}

// answer is the response to one query, the question echoed.
func (s *dnsServer) answer(query []byte) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	name := strings.ToLower(q.Name.String())
	select {
	case s.asked <- q.Type.String() + " " + name:
	default:
	}
	addr, known := s.records[name]
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired}
	if !known {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if known && q.Type == dnsmessage.TypeA {
		if err := b.StartAnswers(); err != nil {
			return nil, err
		}
		rr := dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 5}
		if err := b.AResource(rr, dnsmessage.AResource{A: addr.As4()}); err != nil {
			return nil, err
		}
	}
	return b.Finish()
}

// dnsReport is what dnscheck found where it ran.
type dnsReport struct {
	Pid        int                 `json:"pid"`
	Netns      string              `json:"netns"`
	Uid        string              `json:"uid"`
	Gid        string              `json:"gid"`
	Groups     string              `json:"groups"`
	CapEff     string              `json:"capEff"`
	ResolvConf string              `json:"resolvConf"`
	Hosts      string              `json:"hosts"`
	Lookups    map[string][]string `json:"lookups"`
	Errors     map[string]string   `json:"errors"`
}

// runDNSCheck prints a dnsReport, a line "DNSREPORT JSON": the files the process
// reads at /etc/resolv.conf and /etc/hosts, and what Go's own resolver
// (which reads them) makes of each name of -resolve (comma-separated).
// Arguments after the flags are a command it then becomes (exec), with
// this binary as argv[0]: a container's program.
func runDNSCheck(args []string) int {
	fs := flag.NewFlagSet("dnscheck", flag.ContinueOnError)
	resolve := fs.String("resolve", "", "names to look up, comma-separated")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := dnsCheck(*resolve); err != nil {
		fmt.Fprintln(os.Stderr, "dnscheck:", err)
		return 1
	}
	if rest := fs.Args(); len(rest) > 0 {
		self, err := os.Executable()
		if err == nil {
			err = syscall.Exec(self, append([]string{self}, rest...), os.Environ())
		}
		fmt.Fprintln(os.Stderr, "dnscheck: exec:", err)
		return 1
	}
	return 0
}

func dnsCheck(resolve string) error {
	r := dnsReport{Pid: os.Getpid(), Lookups: map[string][]string{}, Errors: map[string]string{}}
	var err error
	if r.Netns, err = os.Readlink("/proc/self/ns/net"); err != nil {
		return err
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			switch k {
			case "Uid":
				r.Uid = strings.Fields(v)[0]
			case "Gid":
				r.Gid = strings.Fields(v)[0]
			case "Groups":
				r.Groups = strings.Join(strings.Fields(v), " ")
			case "CapEff":
				r.CapEff = strings.TrimSpace(v)
			}
		}
	}
	for path, dst := range map[string]*string{"/etc/resolv.conf": &r.ResolvConf, "/etc/hosts": &r.Hosts} {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		*dst = string(b)
	}
	res := &net.Resolver{PreferGo: true}
	for _, name := range strings.Split(resolve, ",") {
		if name == "" {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		addrs, err := res.LookupHost(ctx, name)
		cancel()
		if err != nil {
			r.Errors[name] = err.Error()
			continue
		}
		r.Lookups[name] = addrs
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = fmt.Printf("%s%s\n", reportPrefix, b)
	return err
}

const reportPrefix = "DNSREPORT "

// dnsReport waits for the report container c of pod printed, and reads it.
func (n *testNode) dnsReport(pod, c string) (dnsReport, error) {
	var r dnsReport
	prefix := pod + "/" + c + " | " + reportPrefix
	err := poll("dnscheck's report from "+pod+"/"+c, func() (bool, string) {
		for _, line := range strings.Split(n.out.String(), "\n") {
			if rest, ok := strings.CutPrefix(line, prefix); ok {
				return json.Unmarshal([]byte(rest), &r) == nil, rest
			}
		}
		return false, "no report"
	})
	return r, err
}
