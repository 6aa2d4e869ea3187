package main

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// machine says where the figures were measured.
type machine struct {
	cpus, gomaxprocs int
	model            string
	memory           string
	kernel           string
	goVersion        string
	loadavg          string
}

func readMachine() machine {
	m := machine{
		cpus:       runtime.NumCPU(),
		gomaxprocs: runtime.GOMAXPROCS(0),
		goVersion:  runtime.Version(),
		model:      "unknown CPU",
		memory:     "unknown memory",
		loadavg:    readLoadavg(),
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.kernel = strings.TrimSpace(string(b))
	}
	if v, ok := procField("/proc/cpuinfo", "model name"); ok {
		m.model = v
	}
	if v, ok := procField("/proc/meminfo", "MemTotal"); ok {
		if kb, err := strconv.ParseFloat(strings.TrimSuffix(v, " kB"), 64); err == nil {
			m.memory = strconv.FormatFloat(kb/(1<<20), 'f', 1, 64) + " GiB"
		}
	}
	return m
}

// readLoadavg is the 1, 5 and 15 minute load averages.
func readLoadavg() string {
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
