package netns

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/vishvananda/netlink"
)

// preflightNeed opens every Preflight error.
const preflightNeed = "podgate needs root (or CAP_SYS_ADMIN and CAP_NET_ADMIN) to create network namespaces"

// Preflight checks, before anything starts, that this process can build
// the pod network: CAP_SYS_ADMIN (unshare, setns) and CAP_NET_ADMIN
// (links, addresses, routes) in its effective set, and then that it
// really can — it creates a scratch namespace on a locked thread, a
// bridge and a veth pair in it, and returns; the scratch namespace goes
// with the thread's way back. A container's seccomp profile, a missing
// bridge or veth driver, or user.max_net_namespaces=0 show up there. The
// calling process's own namespace is not touched.
func Preflight() error {
	has, err := effectiveCaps(capSysAdmin, capNetAdmin)
	if err != nil {
		return fmt.Errorf("%s: %w", preflightNeed, err)
	}
	var missing []string
	for i, name := range []string{"CAP_SYS_ADMIN", "CAP_NET_ADMIN"} {
		if !has[i] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s: running as uid %d without %s", preflightNeed, os.Geteuid(), strings.Join(missing, " and "))
	}
	if err := scratchNetns(); err != nil {
		return fmt.Errorf("%s: %w", preflightNeed, err)
	}
	return nil
}

// scratchNetns does on a throwaway namespace what SetupCluster and AddPod
// do for real.
func scratchNetns() (err error) {
	runtime.LockOSThread()
	back, err := openThreadNetns()
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer closeFd(back)
	if err := unshareNet(); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer func() {
		if rerr := setns(back); rerr != nil {
			err = errors.Join(err, fmt.Errorf("%w: %w", ErrNetnsNotRestored, rerr))
			return // stay locked (see ErrNetnsNotRestored)
		}
		runtime.UnlockOSThread()
	}()
	attrs := netlink.NewLinkAttrs()
	attrs.Name = "pgcheck0"
	if err := netlink.LinkAdd(&netlink.Bridge{LinkAttrs: attrs}); err != nil {
		return fmt.Errorf("a bridge in a scratch namespace (is the bridge driver there?): %w", err)
	}
	attrs = netlink.NewLinkAttrs()
	attrs.Name = "pgcheck1"
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: attrs, PeerName: "pgcheck2"}); err != nil {
		return fmt.Errorf("a veth pair in a scratch namespace (is the veth driver there?): %w", err)
	}
	return nil
}
