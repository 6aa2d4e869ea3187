package proc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Security is what a process gives up before its program runs, as a
// container runtime applies a container's securityContext. The zero
// value gives up nothing: the program runs as podgate does.
//
// Applying it takes a step between the fork and the program: the
// supervising binary is started again in an exec mode of its own
// (RunReaperIfAsked's, hence that function's duty in every main), which
// on the forked process's one thread enters a mount namespace of its own
// and makes it read-only, drops the capability bounding set, switches
// user and group, sets no_new_privs and the parent-death signal (a change
// of user clears it), then replaces itself with the program: the pid the
// node supervises is the program's from the start. Go's SysProcAttr has a
// Credential but neither no_new_privs nor the bounding set, and a root
// process keeps every capability through exec unless its bounding set is
// emptied, so the kernel calls are made in that step.
type Security struct {
	// UID and GID, when set, are the user and group the program runs as;
	// with either set its supplementary groups are Groups and no other
	// (a container runtime's additional GIDs). Unset: podgate's own.
	UID, GID *uint32
	Groups   []uint32
	// Caps, when not nil, is every capability the program may hold (the
	// bounding set, and a root program's permitted and effective sets;
	// inheritable and ambient are emptied). Empty and not nil: none at
	// all, capabilities.drop [ALL]. Nil: podgate's own.
	Caps []Capability
	// NoNewPrivs sets no_new_privs: exec can never grant the program or
	// its children privileges (setuid bits, file capabilities) it did not
	// have — allowPrivilegeEscalation false.
	NoNewPrivs bool
	// ReadOnlyRoot runs the program in a mount namespace of its own in
	// which every mount of this machine is read-only, except /dev and
	// /proc (which a container runtime mounts writable whatever the root
	// filesystem) — readOnlyRootFilesystem for a program that has no root
	// filesystem of its own but this machine's.
	ReadOnlyRoot bool
	// Writable are paths of this machine that stay writable in that
	// view (a container's volumes, which a container runtime mounts
	// writable over a read-only root): each is bound onto itself there,
	// and a path that does not exist is left out.
	Writable []string
	// Binds are files of this machine the program sees in place of
	// others, in a mount namespace of its own (a pod's /etc/resolv.conf
	// and /etc/hosts, which a container runtime mounts into the
	// container): each Source is bound over its Target, which must exist.
	// Made before ReadOnlyRoot's view: a bind stays writable in it unless
	// ReadOnly.
	Binds []Bind
}

// Bind is a file bound over another (Security.Binds).
type Bind struct {
	Source string `json:"src"`
	Target string `json:"dst"`
	// ReadOnly: read-only under ReadOnlyRoot (as a container runtime
	// mounts a pod's resolv.conf into a container whose root file system
	// is read-only); else it stays writable there. With Volume: read-only
	// whatever the root.
	ReadOnly bool `json:"ro,omitempty"`
	// Volume marks a volume mount: Source, a directory (bound with the
	// mounts under it) or a file, is opened before any bind is made, so
	// that an earlier bind cannot hide it; Target need not exist. A
	// missing Target is made in the private namespace only, this
	// machine's file system untouched: a tmpfs is mounted over its
	// nearest existing parent directory, which gets every entry the
	// directory had (each bound from the original, symbolic links copied),
	// and the missing directories (or the file) are made in it. Such a
	// tmpfs is read-only under ReadOnlyRoot, like the root it stands in.
	Volume bool `json:"vol,omitempty"`
}

// Capability is a Linux capability by number (CAP_NET_BIND_SERVICE is 10).
type Capability uint8

// empty reports a Security that gives up nothing.
func (s *Security) empty() bool {
	return s == nil || s.UID == nil && s.GID == nil && s.Caps == nil && !s.NoNewPrivs && !s.ReadOnlyRoot && len(s.Binds) == 0
}

// execEnv switches a binary into exec mode (RunReaperIfAsked): its value
// is the execPlan, JSON. The variable is removed before the program runs.
const execEnv = "PODGATE_INTERNAL_EXEC"

// statusFD is the exec step's pipe back to Start: closed on exec (success)
// or carrying why the step failed.
const statusFD = 3

// execPlan is what the exec step is told: the program and its Security.
type execPlan struct {
	Path   string       `json:"path"`
	UID    *uint32      `json:"uid,omitempty"`
	GID    *uint32      `json:"gid,omitempty"`
	Groups []uint32     `json:"groups,omitempty"`
	Caps   []Capability `json:"caps"` // null: untouched
	NNP    bool         `json:"nnp,omitempty"`
	RO     bool         `json:"ro,omitempty"`
	RW     []string     `json:"rw,omitempty"`
	Binds  []Bind       `json:"binds,omitempty"`
}

func planOf(path string, s *Security) execPlan {
	return execPlan{Path: path, UID: s.UID, GID: s.GID, Groups: s.Groups, Caps: s.Caps, NNP: s.NoNewPrivs, RO: s.ReadOnlyRoot, RW: s.Writable, Binds: s.Binds}
}

// runExecIfAsked is the exec step when this process was started as one:
// it applies the plan and execs the program, and returns only when it
// was not asked.
func runExecIfAsked() {
	raw, ok := os.LookupEnv(execEnv)
	if !ok {
		return
	}
	status := os.NewFile(statusFD, "exec-status")
	var plan execPlan
	err := json.Unmarshal([]byte(raw), &plan)
	if err == nil {
		env := make([]string, 0, len(os.Environ()))
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, execEnv+"=") {
				env = append(env, kv)
			}
		}
		err = applyAndExec(plan, os.Args, env) // returns only on failure
	}
	_, _ = io.WriteString(status, err.Error())
	os.Exit(127)
}

// readStatus reads the exec step's report: nothing (the pipe closed on
// exec) is success.
func readStatus(r *os.File) error {
	defer r.Close()
	msg, err := io.ReadAll(io.LimitReader(r, 4096))
	if err != nil {
		return fmt.Errorf("read the exec step's status: %w", err)
	}
	if len(msg) > 0 {
		return errors.New(string(msg))
	}
	return nil
}
