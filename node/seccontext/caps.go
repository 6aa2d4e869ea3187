package seccontext

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/node/proc"
)

// capNames are Linux's capabilities by number (capability(7)), as a pod
// spec names them without the CAP_ prefix.
var capNames = []string{
	"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID",
	"SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW",
	"IPC_LOCK", "IPC_OWNER", "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT",
	"SYS_ADMIN", "SYS_BOOT", "SYS_NICE", "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD",
	"LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP", "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG",
	"WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF", "CHECKPOINT_RESTORE",
}

// capByName is a capability by its name in a pod spec, with or without
// CAP_, in any case (container runtimes accept both).
func capByName(n corev1.Capability) (proc.Capability, bool) {
	s := strings.TrimPrefix(strings.ToUpper(string(n)), "CAP_")
	for i, name := range capNames {
		if name == s {
			return proc.Capability(i), true
		}
	}
	return 0, false
}
