package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// pidRecord is the pid file: the cluster process, told apart from a later
// process that reuses its pid by its start time, and what the host side
// knows of it.
type pidRecord struct {
	// Pid is the cluster process's, the leader of its session.
	Pid int `json:"pid"`
	// StartTime is its start time in clock ticks since boot
	// (/proc/PID/stat field 22).
	StartTime uint64 `json:"startTime"`
	// HostPid is the `podgate cluster up` that started it.
	HostPid int `json:"hostPid"`
	// Netns is the inode of the cluster's network namespace.
	Netns uint64 `json:"netns"`
	// Server is the API server's URL on the host; FrontDoor the front
	// door's ("" without the install).
	Server    string `json:"server,omitempty"`
	FrontDoor string `json:"frontDoor,omitempty"`
	// Ingress is Knative's ingress on the host ("" without --knative).
	Ingress string `json:"ingress,omitempty"`
}

func writePidFile(dir string, rec pidRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, PidFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("pid file: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, PidFile)); err != nil {
		return fmt.Errorf("pid file: %w", err)
	}
	return nil
}

// readPidFile returns the record, or an error wrapping os.ErrNotExist
// when there is none.
func readPidFile(dir string) (pidRecord, error) {
	var rec pidRecord
	b, err := os.ReadFile(filepath.Join(dir, PidFile))
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(b, &rec); err != nil || rec.Pid <= 1 {
		return rec, fmt.Errorf("pid file %s is not podgate's: %q", filepath.Join(dir, PidFile), strings.TrimSpace(string(b)))
	}
	return rec, nil
}

// procStat is what the cluster needs of /proc/PID/stat.
type procStat struct {
	state     byte
	session   int
	startTime uint64
}

// readStat parses /proc/PID/stat: "PID (COMM) STATE PPID PGRP SESSION
// ... STARTTIME(22) ...", COMM possibly holding spaces and parentheses.
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	session, err1 := strconv.Atoi(f[3])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return procStat{}, fmt.Errorf("parse /proc/%d/stat: %w", pid, err)
	}
	return procStat{state: f[0][0], session: session, startTime: start}, nil
}

// isRecorded reports whether the recorded cluster process still runs:
// the pid is alive, not a zombie, and started when the record says.
func isRecorded(rec pidRecord) bool {
	st, err := readStat(rec.Pid)
	return err == nil && st.state != 'Z' && st.startTime == rec.StartTime
}

// SessionMembers lists the live processes of session sid (zombies
// excluded): every process of a cluster is in its cluster process's
// session, which nothing it runs leaves (podgate starts processes in
// process groups of their own, never sessions).
func SessionMembers(sid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := readStat(pid); err == nil && st.session == sid && st.state != 'Z' {
			out = append(out, pid)
		}
	}
	return out
}

// NetnsHolders lists the processes (or threads) in the network namespace
// with inode ino.
func NetnsHolders(ino uint64) []int {
	tasks, _ := filepath.Glob("/proc/[0-9]*/task/[0-9]*/ns/net")
	seen := map[int]bool{}
	var out []int
	for _, path := range tasks {
		var st syscall.Stat_t
		if syscall.Stat(path, &st) != nil || st.Ino != ino {
			continue
		}
		pid, _ := strconv.Atoi(strings.Split(path, "/")[2])
		if !seen[pid] {
			seen[pid] = true
			out = append(out, pid)
		}
	}
	return out
}

// signalAll sends sig to every listed process, ignoring those gone.
func signalAll(pids []int, sig syscall.Signal) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, sig)
	}
}
