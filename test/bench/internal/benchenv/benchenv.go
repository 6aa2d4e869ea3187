// Package benchenv is what every podgate benchmark command shares: where
// the figures were measured, and the podgate binary under test.
package benchenv

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// Machine says where the figures were measured.
type Machine struct {
	CPUs, GOMAXPROCS int
	Model            string
	Memory           string
	Kernel           string
	GoVersion        string
	Loadavg          string
}

// ReadMachine reads the machine's facts from /proc and the Go runtime.
func ReadMachine() Machine {
	m := Machine{
		CPUs:       runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		GoVersion:  runtime.Version(),
		Model:      "unknown CPU",
		Memory:     "unknown memory",
		Loadavg:    ReadLoadavg(),
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if v, ok := procField("/proc/cpuinfo", "model name"); ok {
		m.Model = v
	}
	if v, ok := procField("/proc/meminfo", "MemTotal"); ok {
		if kb, err := strconv.ParseFloat(strings.TrimSuffix(v, " kB"), 64); err == nil {
			m.Memory = strconv.FormatFloat(kb/(1<<20), 'f', 1, 64) + " GiB"
		}
	}
	return m
}

// String is the one line a report starts with.
func (m Machine) String() string {
	return fmt.Sprintf("%d vCPU (%s), %s, GOMAXPROCS %d, %s, kernel %s",
		m.CPUs, m.Model, m.Memory, m.GOMAXPROCS, m.GoVersion, m.Kernel)
}

// ReadLoadavg is the 1, 5 and 15 minute load averages.
func ReadLoadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// procField is the first "key: value" line's value in a /proc file.
func procField(path, key string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// ModuleRoot is the directory of this module's go.mod.
func ModuleRoot(ctx context.Context) (string, error) {
	gomod, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	return filepath.Dir(strings.TrimSpace(string(gomod))), nil
}

// BuildPodgate builds the podgate command of this module into dir,
// static (CGO_ENABLED=0) as hack/image.sh builds it: `podgate cluster
// up` puts this very binary into its image.
func BuildPodgate(ctx context.Context, dir string) (string, error) {
	return build(ctx, dir, "podgate")
}

// BuildGate builds podgate-gate, the gate alone (what runs in every pod
// on a cluster), into dir, static as its image holds it.
func BuildGate(ctx context.Context, dir string) (string, error) {
	return build(ctx, dir, "podgate-gate")
}

func build(ctx context.Context, dir, command string) (string, error) {
	root, err := ModuleRoot(ctx)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, command)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "./cmd/"+command)
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stderr, os.Stderr
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/%s: %w", command, err)
	}
	return bin, nil
}
