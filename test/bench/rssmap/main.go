// Command rssmap says what of a running Go program's binary is resident:
// which of its sections and which packages' code and data the pages of
// its RssFile belong to. It reads /proc/PID/maps and /proc/PID/pagemap
// (the present bit of each page of the mappings of the executable) and
// the binary's ELF sections and symbols. It needs to read the process's
// pagemap: root, or the process's owner.
//
//	go run ./test/bench/rssmap PID
//	go run ./test/bench/rssmap -top 60 PID
//
// A page counts for the section holding it and for the package owning
// most of its bytes among the symbols on it; pages of .gopclntab (the
// runtime's tables of functions and lines, which have no symbols of their
// own) and of string and type data count as "(tables)". It is how
// docs/benchmarks.md's breakdown of the gate's memory was made.
package main

import (
	"bufio"
	"debug/elf"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

const pageSize = 4096

func main() {
	top := flag.Int("top", 40, "packages listed")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: rssmap [-top N] PID")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	pid, err := strconv.Atoi(flag.Arg(0))
	if err != nil || pid <= 0 {
		fmt.Fprintf(os.Stderr, "rssmap: PID %q: not a process id\n", flag.Arg(0))
		os.Exit(2)
	}
	r, err := measure(pid)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rssmap:", err)
		os.Exit(1)
	}
	r.print(os.Stdout, *top)
}

// region is one mapping of the executable.
type region struct{ lo, hi, off uint64 }

type report struct {
	exe       string
	resident  int
	sections  map[string][2]int // name → resident pages, pages
	packages  map[string]int
	sectOrder []string
}

func measure(pid int) (*report, error) {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return nil, err
	}
	f, err := elf.Open(exe)
	if err != nil {
		return nil, fmt.Errorf("reading the binary: %w", err)
	}
	defer f.Close()
	regions, err := mappings(pid, exe)
	if err != nil {
		return nil, err
	}
	pm, err := os.Open(fmt.Sprintf("/proc/%d/pagemap", pid))
	if err != nil {
		return nil, err
	}
	defer pm.Close()
	bias := loadBias(f, regions)
	syms := symbols(f)
	r := &report{exe: exe, sections: map[string][2]int{}, packages: map[string]int{}}
	counted := map[uint64]bool{} // a page two sections share counts once in the total
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 || s.Type == elf.SHT_NOBITS || s.Size == 0 {
			continue
		}
		r.sectOrder = append(r.sectOrder, s.Name)
		for a := s.Addr &^ (pageSize - 1); a < s.Addr+s.Size; a += pageSize {
			if !inside(regions, a+bias) {
				continue
			}
			present, err := isPresent(pm, a+bias)
			if err != nil {
				return nil, err
			}
			c := r.sections[s.Name]
			c[1]++
			if present {
				c[0]++
				if !counted[a] {
					counted[a] = true
					r.resident++
					r.packages[owner(syms, a)]++
				}
			}
			r.sections[s.Name] = c
		}
	}
	return r, nil
}

// mappings are the address ranges where pid maps exe.
func mappings(pid int, exe string) ([]region, error) {
	m, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, err
	}
	defer m.Close()
	var out []region
	sc := bufio.NewScanner(m)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 6 || fs[5] != exe {
			continue
		}
		lo, hi, _ := strings.Cut(fs[0], "-")
		l, err1 := strconv.ParseUint(lo, 16, 64)
		h, err2 := strconv.ParseUint(hi, 16, 64)
		o, err3 := strconv.ParseUint(fs[2], 16, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("maps line %q", sc.Text())
		}
		out = append(out, region{l, h, o})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("process %d maps nothing of %s", pid, exe)
	}
	return out, sc.Err()
}

// loadBias is where a position-independent binary was loaded: the
// distance from its first segment's address in the file to the mapping
// of file offset 0. Go's default non-PIE binaries load where they say (0).
func loadBias(f *elf.File, rs []region) uint64 {
	if f.Type != elf.ET_DYN {
		return 0
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Off == 0 {
			for _, r := range rs {
				if r.off == 0 {
					return r.lo - p.Vaddr&^(pageSize-1)
				}
			}
		}
	}
	return 0
}

func inside(rs []region, a uint64) bool {
	for _, r := range rs {
		if r.lo <= a && a < r.hi {
			return true
		}
	}
	return false
}

// isPresent reads bit 63 of the page's pagemap entry: in memory.
func isPresent(pm io.ReaderAt, addr uint64) (bool, error) {
	var b [8]byte
	if _, err := pm.ReadAt(b[:], int64(addr/pageSize*8)); err != nil {
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		return false, fmt.Errorf("pagemap: %w", err)
	}
	return binary.LittleEndian.Uint64(b[:])&(1<<63) != 0, nil
}

type symbol struct {
	addr, size uint64
	pkg        string
}

func symbols(f *elf.File) []symbol {
	ss, _ := f.Symbols()
	var out []symbol
	for _, s := range ss {
		if s.Size > 0 && elf.ST_TYPE(s.Info) != elf.STT_SECTION {
			out = append(out, symbol{s.Value, s.Size, packageOf(s.Name)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].addr < out[j].addr })
	return out
}

// owner is the package with the most bytes on the page at a.
func owner(syms []symbol, a uint64) string {
	i := sort.Search(len(syms), func(i int) bool { return syms[i].addr+syms[i].size > a })
	bytes := map[string]uint64{}
	for ; i < len(syms) && syms[i].addr < a+pageSize; i++ {
		lo, hi := max(syms[i].addr, a), min(syms[i].addr+syms[i].size, a+pageSize)
		if hi > lo {
			bytes[syms[i].pkg] += hi - lo
		}
	}
	best, most := "(tables)", uint64(0)
	for p, n := range bytes {
		if n > most || (n == most && p < best) {
			best, most = p, n
		}
	}
	return best
}

// groups are module paths counted as one.
var groups = []string{
	"k8s.io/api/", "k8s.io/apimachinery/", "k8s.io/client-go/", "k8s.io/klog", "k8s.io/kube-openapi/", "k8s.io/utils/",
	"google.golang.org/grpc", "google.golang.org/protobuf/", "github.com/prometheus/", "github.com/podgate/podgate/",
	"golang.org/x/net/", "golang.org/x/text/", "github.com/spf13/", "github.com/fxamacker/cbor", "sigs.k8s.io/",
	"github.com/json-iterator/", "github.com/modern-go/", "go.yaml.in/", "github.com/google/", "crypto/", "net/http",
	"vendor/golang.org/x/", "runtime", "encoding/", "text/template", "html/template", "regexp",
}

// packageOf is a Go symbol's package (or its group), "(tables)" for the
// runtime's tables, strings and types.
func packageOf(name string) string {
	if strings.HasPrefix(name, "go:") || strings.HasPrefix(name, "type:") || strings.HasPrefix(name, "runtime.") && strings.Contains(name, "pclntab") {
		return "(tables)"
	}
	slash := strings.LastIndex(name, "/")
	dot := strings.Index(name[slash+1:], ".")
	if dot < 0 {
		return "(other)"
	}
	p := name[:slash+1+dot]
	for _, g := range groups {
		if strings.HasPrefix(p, g) {
			return strings.TrimSuffix(g, "/") + "…"
		}
	}
	return p
}

func (r *report) print(w io.Writer, top int) {
	mb := func(pages int) string { return fmt.Sprintf("%6.2f MB", float64(pages)*pageSize/1e6) }
	fmt.Fprintf(w, "%s: %s of it resident\n\nsection            resident / in the binary\n", r.exe, mb(r.resident))
	for _, s := range r.sectOrder {
		c := r.sections[s]
		if c[1] > 0 {
			fmt.Fprintf(w, "  %-16s %s / %s\n", s, mb(c[0]), mb(c[1]))
		}
	}
	type kv struct {
		k string
		v int
	}
	var l []kv
	for k, v := range r.packages {
		l = append(l, kv{k, v})
	}
	sort.Slice(l, func(i, j int) bool { return l[i].v > l[j].v || l[i].v == l[j].v && l[i].k < l[j].k })
	fmt.Fprintf(w, "\nresident pages by the package owning most of each page\n")
	for i, x := range l {
		if i == top {
			break
		}
		fmt.Fprintf(w, "  %-40s %s\n", x.k, mb(x.v))
	}
}
