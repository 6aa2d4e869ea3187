package proc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// applyAndExec is the exec step (see Security): every call below acts on
// this one thread (namespaces, capabilities, no_new_privs and the
// credentials switched with raw per-thread system calls), and the exec
// is made from it, which ends every other thread of the process.
func applyAndExec(p execPlan, argv, env []string) error {
	runtime.LockOSThread() // for good: the thread execs or the process exits
	ppid := os.Getppid()
	syscall.CloseOnExec(statusFD)
	if p.RO || len(p.Binds) > 0 {
		if err := mounts(p); err != nil {
			return err
		}
	}
	// Opened while still privileged: a program in a directory its user
	// cannot search (a cache under /root) still runs, as a container's
	// user runs an image's program whatever the host's paths.
	prog, err := unix.Open(p.Path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", p.Path, err)
	}
	if p.Caps != nil {
		if err := dropBounding(p.Caps); err != nil {
			return fmt.Errorf("capabilities: %w", err)
		}
	}
	if p.UID != nil || p.GID != nil {
		if err := switchUser(p); err != nil {
			return err
		}
	}
	if p.Caps != nil {
		if err := limitCaps(p.Caps); err != nil {
			return fmt.Errorf("capabilities: %w", err)
		}
	}
	if p.NNP {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("no_new_privs: %w", err)
		}
	}
	// A change of user cleared the parent-death signal; set it again, and
	// leave if the parent died meanwhile (its signal is gone with it).
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("parent-death signal: %w", err)
	}
	if os.Getppid() != ppid {
		return errors.New("podgate exited while the container started")
	}
	err = syscall.Exec(p.Path, argv, env)
	if errors.Is(err, syscall.EACCES) {
		// The user cannot reach the program's path: run the file opened
		// above.
		err = execveat(prog, argv, env)
	}
	return fmt.Errorf("exec %s: %w", p.Path, err)
}

// mounts puts this thread in a mount namespace of its own (private, so
// nothing of it reaches this machine's), binds the plan's files and
// volumes there, makes the view read-only if asked, and read-only
// volumes read-only whatever the root.
func mounts(p execPlan) error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("mount namespace: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	// Volumes' sources, opened before any bind or tmpfs can hide them.
	srcs := map[int]int{}
	for i, b := range p.Binds {
		if !b.Volume {
			continue
		}
		fd, err := unix.Open(b.Source, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("volume for %s: open %s: %w", b.Target, b.Source, err)
		}
		srcs[i] = fd
	}
	made := map[string]bool{} // directories of tmpfs this namespace made
	var writable, readOnly []string
	for i, b := range p.Binds {
		if b.Volume {
			if err := mountVolume(srcs[i], b.Target, made); err != nil {
				return fmt.Errorf("volume at %s: %w", b.Target, err)
			}
			_ = unix.Close(srcs[i])
			if b.ReadOnly {
				readOnly = append(readOnly, b.Target)
				continue
			}
		} else if err := unix.Mount(b.Source, b.Target, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s over %s: %w", b.Source, b.Target, err)
		}
		if !b.ReadOnly {
			writable = append(writable, b.Target)
		}
	}
	if p.RO {
		if err := readOnlyRoot(p.RW, writable); err != nil {
			return fmt.Errorf("readOnlyRootFilesystem: %w", err)
		}
	}
	for _, t := range readOnly {
		if err := makeReadOnly(t); err != nil {
			return fmt.Errorf("read-only volume at %s: %w", t, err)
		}
	}
	return nil
}

// makeReadOnly makes the mount at path, and those under it, read-only.
func makeReadOnly(path string) error {
	ro := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	err := unix.MountSetattr(unix.AT_FDCWD, path, unix.AT_RECURSIVE, ro)
	if errors.Is(err, unix.ENOSYS) {
		// Before Linux 5.12: the mount itself, not those under it.
		err = unix.Mount("", path, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, "")
	}
	return err
}

// mountVolume binds the volume open at fd onto target (a directory with
// the mounts under it), made first if missing (ensureTarget).
func mountVolume(fd int, target string, made map[string]bool) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	dir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	if err := ensureTarget(target, dir, made); err != nil {
		return err
	}
	flags := uintptr(unix.MS_BIND)
	if dir {
		flags |= unix.MS_REC
	}
	if err := unix.Mount(fdPath(fd, ""), target, "", flags, ""); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	return nil
}

func fdPath(fd int, name string) string {
	p := "/proc/self/fd/" + strconv.Itoa(fd)
	if name != "" {
		p += "/" + name
	}
	return p
}

// ensureTarget makes target exist in this namespace, a directory or a
// file, without touching this machine's file system: its nearest
// existing parent is shadowed by a tmpfs (shadow) unless it is a
// directory of such a tmpfs already (made), and the rest is made there.
func ensureTarget(target string, dir bool, made map[string]bool) error {
	if !filepath.IsAbs(target) {
		return fmt.Errorf("mount path %q is not absolute", target)
	}
	existing := filepath.Clean(target)
	var missing []string
	for {
		info, err := os.Stat(existing)
		if err == nil {
			if len(missing) == 0 && info.IsDir() != dir {
				what := map[bool]string{true: "a directory", false: "a file"}
				return fmt.Errorf("%s is %s and the volume %s", target, what[info.IsDir()], what[dir])
			}
			break
		}
		if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		missing = append([]string{filepath.Base(existing)}, missing...)
		existing = filepath.Dir(existing)
	}
	if len(missing) == 0 {
		return nil
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return err
	}
	if !made[real] {
		if real == "/" {
			return fmt.Errorf("%s does not exist, and / is not shadowed", target)
		}
		if err := shadow(real); err != nil {
			return fmt.Errorf("shadow %s: %w", real, err)
		}
		made[real] = true
	}
	cur := real
	for i, name := range missing {
		cur = filepath.Join(cur, name)
		if i == len(missing)-1 && !dir {
			f, err := os.OpenFile(cur, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o644)
			if err != nil {
				return err
			}
			_ = f.Close()
		} else if err := os.Mkdir(cur, 0o755); err != nil {
			return err
		}
		made[cur] = true
	}
	return nil
}

// shadow mounts a tmpfs over dir (its owner and mode kept) holding what
// dir held: each directory and file bound from the original (mounts under
// them with them), each symbolic link copied.
func shadow(dir string) error {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	opts := fmt.Sprintf("mode=%o,uid=%d,gid=%d", st.Mode&0o7777, st.Uid, st.Gid)
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("tmpfs: %w", err)
	}
	for _, e := range ents {
		src, dst := fdPath(fd, e.Name()), filepath.Join(dir, e.Name())
		switch {
		case e.Type()&os.ModeSymlink != 0:
			link, err := os.Readlink(src)
			if err != nil {
				return err
			}
			if err := os.Symlink(link, dst); err != nil {
				return err
			}
			continue
		case e.IsDir():
			if err := os.Mkdir(dst, 0o755); err != nil {
				return err
			}
		default:
			f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o644)
			if err != nil {
				return err
			}
			_ = f.Close()
		}
		if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s back: %w", dst, err)
		}
	}
	return nil
}

// readOnlyRoot makes every mount of this thread's (private) mount
// namespace read-only but /dev and /proc and what is under them, the
// writable paths, each bound onto itself first so that it is a mount of
// its own, and bound, mounts of their own already.
func readOnlyRoot(writable, bound []string) error {
	for _, w := range writable {
		if _, err := os.Stat(w); err != nil {
			continue
		}
		if err := unix.Mount(w, w, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("keep %s writable: %w", w, err)
		}
		bound = append(bound, w)
	}
	ro := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, ro); err != nil {
		return fmt.Errorf("make / read-only (mount_setattr, Linux 5.12 or later): %w", err)
	}
	rw := &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}
	for _, m := range append([]string{"/dev", "/proc"}, bound...) {
		// EINVAL: not a mount of its own here, so it stays read-only.
		if err := unix.MountSetattr(unix.AT_FDCWD, m, unix.AT_RECURSIVE, rw); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("keep %s writable: %w", m, err)
		}
	}
	return nil
}

// dropBounding removes every capability not in keep from the bounding
// set, so that no exec, even as root, grants one.
func dropBounding(keep []Capability) error {
	last, err := lastCap()
	if err != nil {
		return err
	}
	for c := 0; c <= last; c++ {
		if has(keep, Capability(c)) {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	return nil
}

// limitCaps empties the inheritable and ambient sets and keeps at most
// keep in the permitted and effective ones (a program that stays root;
// a switch to another user has emptied them already).
func limitCaps(keep []Capability) error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear ambient: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	var mask [2]uint32
	for _, c := range keep {
		mask[c/32] |= 1 << (c % 32)
	}
	for i := range data {
		data[i].Inheritable = 0
		data[i].Permitted &= mask[i]
		data[i].Effective &= mask[i]
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}

// switchUser sets the supplementary groups, the group and the user, on
// this thread only (the exec ends the others).
func switchUser(p execPlan) error {
	gid, uid := uintptr(0), uintptr(0)
	if p.GID != nil {
		gid = uintptr(*p.GID)
	}
	if p.UID != nil {
		uid = uintptr(*p.UID)
	}
	var groups unsafe.Pointer
	if len(p.Groups) > 0 {
		groups = unsafe.Pointer(&p.Groups[0])
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(p.Groups)), uintptr(groups), 0); e != 0 {
		return fmt.Errorf("setgroups %v: %w", p.Groups, e)
	}
	if p.GID != nil {
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, gid, gid, gid); e != 0 {
			return fmt.Errorf("setgid %d: %w", gid, e)
		}
	}
	if p.UID != nil {
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uid, uid, uid); e != 0 {
			return fmt.Errorf("setuid %d: %w", uid, e)
		}
	}
	return nil
}

// execveat runs the program open at fd.
func execveat(fd int, argv, env []string) error {
	argvp, err := syscall.SlicePtrFromStrings(argv)
	if err != nil {
		return err
	}
	envp, err := syscall.SlicePtrFromStrings(env)
	if err != nil {
		return err
	}
	empty, _ := syscall.BytePtrFromString("")
	_, _, e := unix.Syscall6(unix.SYS_EXECVEAT, uintptr(fd), uintptr(unsafe.Pointer(empty)),
		uintptr(unsafe.Pointer(&argvp[0])), uintptr(unsafe.Pointer(&envp[0])), unix.AT_EMPTY_PATH, 0)
	return e
}

// lastCap is the highest capability this kernel knows.
func lastCap() (int, error) {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

func has(caps []Capability, c Capability) bool {
	for _, k := range caps {
		if k == c {
			return true
		}
	}
	return false
}
