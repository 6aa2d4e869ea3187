// Package seccontext is a container's securityContext as the node agent
// applies it, decided before the container starts, without processes:
// the kubelet's effective context (the pod's, with the container's fields
// over it), the kubelet's runAsNonRoot check and its exact refusals, and
// what the process gives up (package node/proc's Security) — the user and
// groups, the capabilities, no_new_privs, a read-only view of the mounts —
// with a warning for every field the node does not enforce, so that none
// is ignored in silence (docs/running.md, "Security context").
package seccontext

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/node/proc"
)

// Image is what the node knows of the user an image runs as.
type Image struct {
	// Known: the image's config was read (an image of the node's store,
	// or one of podgate's own). Else the container's program is a
	// program of this machine, which runs as the node does.
	Known bool
	// User is the config's User: "" (a container runtime runs it as
	// root), UID, UID:GID, or a name.
	User string
}

// Node is who the node agent runs as.
type Node struct {
	UID, GID uint32
}

// Decision is how a container starts under its security context.
type Decision struct {
	// Refused, when set, is the kubelet's error that keeps the container
	// from starting (it waits as CreateContainerConfigError with it).
	Refused string
	// Security is what its process gives up; nil: nothing.
	Security *proc.Security
	// Warnings name each field the node does not enforce, and why.
	Warnings []string
}

// Decide decides how container c of pod starts on node, its image's user
// as img says.
func Decide(pod *corev1.Pod, c *corev1.Container, img Image, node Node) Decision {
	sc := Effective(pod, c)
	var d Decision
	uid, gid, name, err := imageUser(img, node)
	if err != nil {
		d.Warnings = append(d.Warnings, err.Error())
	}
	if msg := verifyRunAsNonRoot(pod, c, sc, uid, name); msg != "" {
		return Decision{Refused: msg}
	}
	sec := &proc.Security{}
	root := node.UID == 0
	d.Warnings = append(d.Warnings, user(sec, pod, sc, uid, gid, node)...)
	if nonRoot := sc.RunAsNonRoot != nil && *sc.RunAsNonRoot; nonRoot && runsAsRoot(sec, node) {
		// The check above passed on a user the process does not get
		// (none this machine can have): it must not run as root.
		return Decision{Refused: fmt.Sprintf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", podDesc(pod), c.Name)}
	}
	if sc.Privileged != nil && *sc.Privileged {
		// A container runtime gives a privileged container every
		// capability and ignores capabilities' add and drop: the process
		// keeps the node's (all of them on a root node).
		if !root {
			d.Warnings = append(d.Warnings, "privileged is not enforced: the node is not root and has no capability to give")
		}
	} else {
		d.Warnings = append(d.Warnings, capabilities(sec, sc, root)...)
	}
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		sec.NoNewPrivs = true
	}
	if sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem {
		if root {
			sec.ReadOnlyRoot = true
			// A container's volumes are writable over its read-only
			// root; locally a volume is this machine's path, kept
			// writable.
			for _, m := range c.VolumeMounts {
				if !m.ReadOnly && m.MountPath != "" {
					sec.Writable = append(sec.Writable, m.MountPath)
				}
			}
		} else {
			d.Warnings = append(d.Warnings, "readOnlyRootFilesystem is not enforced: the node is not root, and a read-only view of this machine's mounts needs a mount namespace")
		}
	}
	d.Warnings = append(d.Warnings, unenforced(pod, sc)...)
	if sec.UID != nil || sec.GID != nil || sec.Caps != nil || sec.NoNewPrivs || sec.ReadOnlyRoot {
		d.Security = sec
	}
	return d
}

// Effective is the kubelet's effective security context of c: the pod's
// runAsUser, runAsGroup, runAsNonRoot, seLinuxOptions, windowsOptions,
// seccompProfile and appArmorProfile, each replaced by the container's
// when it sets it, and the container's own fields.
func Effective(pod *corev1.Pod, c *corev1.Container) corev1.SecurityContext {
	var sc corev1.SecurityContext
	if p := pod.Spec.SecurityContext; p != nil {
		sc = corev1.SecurityContext{
			RunAsUser: p.RunAsUser, RunAsGroup: p.RunAsGroup, RunAsNonRoot: p.RunAsNonRoot,
			SELinuxOptions: p.SELinuxOptions, WindowsOptions: p.WindowsOptions,
			SeccompProfile: p.SeccompProfile, AppArmorProfile: p.AppArmorProfile,
		}
	}
	cs := c.SecurityContext
	if cs == nil {
		return sc
	}
	set := func(dst **int64, src *int64) {
		if src != nil {
			*dst = src
		}
	}
	set(&sc.RunAsUser, cs.RunAsUser)
	set(&sc.RunAsGroup, cs.RunAsGroup)
	if cs.RunAsNonRoot != nil {
		sc.RunAsNonRoot = cs.RunAsNonRoot
	}
	if cs.SELinuxOptions != nil {
		sc.SELinuxOptions = cs.SELinuxOptions
	}
	if cs.WindowsOptions != nil {
		sc.WindowsOptions = cs.WindowsOptions
	}
	if cs.SeccompProfile != nil {
		sc.SeccompProfile = cs.SeccompProfile
	}
	if cs.AppArmorProfile != nil {
		sc.AppArmorProfile = cs.AppArmorProfile
	}
	sc.Capabilities, sc.Privileged, sc.ProcMount = cs.Capabilities, cs.Privileged, cs.ProcMount
	sc.ReadOnlyRootFilesystem, sc.AllowPrivilegeEscalation = cs.ReadOnlyRootFilesystem, cs.AllowPrivilegeEscalation
	return sc
}

// imageUser is the user and group the image runs as: its config's, root
// for a config without one (as a container runtime), the node's own for
// a program of this machine. A name is returned as such (uid nil).
func imageUser(img Image, node Node) (uid, gid *int64, name string, err error) {
	if !img.Known {
		u, g := int64(node.UID), int64(node.GID)
		return &u, &g, "", nil
	}
	if img.User == "" {
		var zero int64
		return &zero, nil, "", nil
	}
	us, gs, hasGroup := strings.Cut(img.User, ":")
	if us == "" {
		us = "0" // ":GID": no user, so root, as a container runtime reads it
	}
	u, uerr := strconv.ParseInt(us, 10, 64)
	if uerr != nil {
		name = us
	} else {
		uid = &u
	}
	if hasGroup {
		if g, gerr := strconv.ParseInt(gs, 10, 64); gerr == nil {
			gid = &g
		} else {
			err = fmt.Errorf("the image's group %q is a name, which the node cannot look up (the image has no /etc/group here): the group is the node's unless runAsGroup is set", gs)
		}
	}
	return uid, gid, name, err
}

// verifyRunAsNonRoot is the kubelet's check, with its words: "" when the
// container may start.
func verifyRunAsNonRoot(pod *corev1.Pod, c *corev1.Container, sc corev1.SecurityContext, uid *int64, name string) string {
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		return ""
	}
	desc := podDesc(pod)
	if sc.RunAsUser != nil {
		if *sc.RunAsUser == 0 {
			return fmt.Sprintf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", desc, c.Name)
		}
		return ""
	}
	switch {
	case uid == nil && name != "":
		return fmt.Sprintf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", name, desc, c.Name)
	case uid != nil && *uid == 0:
		return fmt.Sprintf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", desc, c.Name)
	case uid != nil && (*uid < 0 || *uid > math.MaxInt32):
		return fmt.Sprintf("container has runAsNonRoot and image has an invalid user id (%d). (Must be 1-(%d)): must be between 0 and %d, inclusive (pod: %q, container: %s)",
			*uid, math.MaxInt32, math.MaxInt32, desc, c.Name)
	}
	return ""
}

// runsAsRoot reports a process that will run as root.
func runsAsRoot(sec *proc.Security, node Node) bool {
	if sec.UID != nil {
		return *sec.UID == 0
	}
	return node.UID == 0
}

// podDesc is the kubelet's name of a pod in messages: NAME_NAMESPACE(UID).
func podDesc(pod *corev1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// user sets who the process runs as. The node switches user when the
// context names a user, a group or supplementary groups, and when
// runAsNonRoot passed on the image's user: a program of this machine
// otherwise runs as the node does (an image's user is otherwise a
// container's alone; locally the program stands in for it).
func user(sec *proc.Security, pod *corev1.Pod, sc corev1.SecurityContext, uid, gid *int64, node Node) []string {
	var groups []int64
	if p := pod.Spec.SecurityContext; p != nil {
		groups = append(groups, p.SupplementalGroups...)
		if p.FSGroup != nil {
			groups = append(groups, *p.FSGroup)
		}
	}
	nonRoot := sc.RunAsNonRoot != nil && *sc.RunAsNonRoot
	if sc.RunAsUser == nil && sc.RunAsGroup == nil && len(groups) == 0 && !nonRoot {
		return nil
	}
	if sc.RunAsUser != nil {
		// Another user than the image's: the image's group goes with
		// its user (a container runtime looks the new user's group up in
		// the image's /etc/passwd, which podgate's images have not: 0).
		uid, gid = sc.RunAsUser, nil
	}
	if sc.RunAsGroup != nil {
		gid = sc.RunAsGroup
	}
	u, g := int64(node.UID), int64(0) // a user without a group runs in group 0, as in a container
	if uid != nil {
		u = *uid
	}
	if gid != nil {
		g = *gid
	}
	if u < 0 || u > math.MaxUint32 || g < 0 || g > math.MaxUint32 {
		return []string{fmt.Sprintf("runAsUser/runAsGroup %d:%d is not a user this machine has: it runs as the node's user", u, g)}
	}
	slices.Sort(groups)
	groups = slices.Compact(groups)
	if node.UID != 0 {
		if u == int64(node.UID) && g == int64(node.GID) && len(groups) == 0 {
			return nil
		}
		return []string{fmt.Sprintf("runs as the node's user %d:%d, not %d:%d: the node is not root and cannot switch users", node.UID, node.GID, u, g)}
	}
	uu, gg := uint32(u), uint32(g)
	sec.UID, sec.GID = &uu, &gg
	for _, x := range groups {
		if x >= 0 && x <= math.MaxUint32 {
			sec.Groups = append(sec.Groups, uint32(x))
		}
	}
	return nil
}

// capabilities sets the capability set of a context that names any: drop
// ALL starts from none, else from the node's own; then add, less drop.
func capabilities(sec *proc.Security, sc corev1.SecurityContext, root bool) []string {
	c := sc.Capabilities
	if c == nil || len(c.Add) == 0 && len(c.Drop) == 0 {
		return nil
	}
	var warns []string
	if !root {
		if len(c.Add) > 0 {
			warns = append(warns, fmt.Sprintf("capabilities.add %v is not granted: the node is not root and has none to give (the process holds no capability)", c.Add))
		}
		return warns
	}
	dropAll := false
	var drop, add []proc.Capability
	for _, n := range c.Drop {
		if strings.EqualFold(string(n), "ALL") {
			dropAll = true
			continue
		}
		if v, ok := capByName(n); ok {
			drop = append(drop, v)
		} else {
			warns = append(warns, fmt.Sprintf("capabilities.drop: unknown capability %q", n))
		}
	}
	for _, n := range c.Add {
		if strings.EqualFold(string(n), "ALL") {
			for v := range capNames {
				add = append(add, proc.Capability(v))
			}
			continue
		}
		if v, ok := capByName(n); ok {
			add = append(add, v)
		} else {
			warns = append(warns, fmt.Sprintf("capabilities.add: unknown capability %q", n))
		}
	}
	keep := []proc.Capability{}
	if !dropAll {
		for v := range capNames {
			keep = append(keep, proc.Capability(v))
		}
	}
	for _, v := range add {
		if !slices.Contains(keep, v) {
			keep = append(keep, v)
		}
	}
	keep = slices.DeleteFunc(keep, func(v proc.Capability) bool { return slices.Contains(drop, v) })
	slices.Sort(keep)
	sec.Caps = keep
	return warns
}

// unenforced names the fields the node does not enforce.
func unenforced(pod *corev1.Pod, sc corev1.SecurityContext) []string {
	var w []string
	if sc.SeccompProfile != nil && sc.SeccompProfile.Type != corev1.SeccompProfileTypeUnconfined {
		w = append(w, fmt.Sprintf("seccompProfile %s is not enforced: the node installs no seccomp filter (the process may make any system call its user may)", sc.SeccompProfile.Type))
	}
	if sc.AppArmorProfile != nil && sc.AppArmorProfile.Type != corev1.AppArmorProfileTypeUnconfined {
		w = append(w, fmt.Sprintf("appArmorProfile %s is not enforced: the node loads no AppArmor profile", sc.AppArmorProfile.Type))
	}
	if sc.SELinuxOptions != nil {
		w = append(w, "seLinuxOptions are not enforced: the node sets no SELinux label")
	}
	if sc.ProcMount != nil && *sc.ProcMount != corev1.DefaultProcMount {
		w = append(w, fmt.Sprintf("procMount %s is not enforced: the process sees this machine's /proc", *sc.ProcMount))
	}
	if p := pod.Spec.SecurityContext; p != nil && len(p.Sysctls) > 0 {
		w = append(w, "sysctls are not set: the pod shares this machine's kernel settings")
	}
	return w
}
