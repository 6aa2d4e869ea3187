package seccontext

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podgate/podgate/node/proc"
	"github.com/podgate/podgate/test/queueenv"
)

var (
	rootNode = Node{UID: 0, GID: 0}
	userNode = Node{UID: 1000, GID: 1000}
	gateImg  = Image{Known: true, User: "65532:65532"}
	rootImg  = Image{Known: true, User: ""}
	hostProg = Image{}
)

func pod(psc *corev1.PodSecurityContext, csc *corev1.SecurityContext) (*corev1.Pod, *corev1.Container) {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hello-1", Namespace: "default", UID: "0b5c"},
		Spec: corev1.PodSpec{SecurityContext: psc,
			Containers: []corev1.Container{{Name: "queue-proxy", SecurityContext: csc,
				VolumeMounts: []corev1.VolumeMount{{Name: "cache", MountPath: "/var/cache/app"}, {Name: "cfg", MountPath: "/etc/app", ReadOnly: true}}}}},
	}
	return p, &p.Spec.Containers[0]
}

func u32(v uint32) *uint32 { return &v }

func TestRunAsNonRootRefusesWithTheKubeletsWords(t *testing.T) {
	nonRoot := &corev1.SecurityContext{RunAsNonRoot: ptr.To(true)}
	for _, tc := range []struct {
		name string
		psc  *corev1.PodSecurityContext
		csc  *corev1.SecurityContext
		img  Image
		node Node
		want string
	}{
		{"an image without a user runs as root", nil, nonRoot, rootImg, rootNode,
			`container has runAsNonRoot and image will run as root (pod: "hello-1_default(0b5c)", container: queue-proxy)`},
		{"an image whose user is 0", nil, nonRoot, Image{Known: true, User: "0:0"}, rootNode,
			`container has runAsNonRoot and image will run as root (pod: "hello-1_default(0b5c)", container: queue-proxy)`},
		{"a program of this machine under a root node runs as root", nil, nonRoot, hostProg, rootNode,
			`container has runAsNonRoot and image will run as root (pod: "hello-1_default(0b5c)", container: queue-proxy)`},
		{"an image whose user is a name", nil, nonRoot, Image{Known: true, User: "nobody"}, rootNode,
			`container has runAsNonRoot and image has non-numeric user (nobody), cannot verify user is non-root (pod: "hello-1_default(0b5c)", container: queue-proxy)`},
		{"runAsUser 0", nil, &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](0)}, gateImg, rootNode,
			`container's runAsUser breaks non-root policy (pod: "hello-1_default(0b5c)", container: queue-proxy)`},
		{"the pod's runAsNonRoot, the container's runAsUser 0", &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
			&corev1.SecurityContext{RunAsUser: ptr.To[int64](0)}, gateImg, rootNode,
			`container's runAsUser breaks non-root policy (pod: "hello-1_default(0b5c)", container: queue-proxy)`},
		{"an image uid beyond int32", nil, nonRoot, Image{Known: true, User: "4294967295"}, rootNode,
			`container has runAsNonRoot and image has an invalid user id (4294967295). (Must be 1-(2147483647)): must be between 0 and 2147483647, inclusive (pod: "hello-1_default(0b5c)", container: queue-proxy)`},
		{"an image whose user is only a group runs as root", nil, nonRoot, Image{Known: true, User: ":65532"}, rootNode,
			`container has runAsNonRoot and image will run as root (pod: "hello-1_default(0b5c)", container: queue-proxy)`},
		{"the gate's image passes", nil, nonRoot, gateImg, rootNode, ""},
		{"runAsUser over a root image passes", nil, &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1)}, rootImg, rootNode, ""},
		{"the container's runAsNonRoot false beats the pod's true", &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
			&corev1.SecurityContext{RunAsNonRoot: ptr.To(false)}, rootImg, rootNode, ""},
		{"a program of this machine under a non-root node runs as that user", nil, nonRoot, hostProg, userNode, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, c := pod(tc.psc, tc.csc)
			d := Decide(p, c, tc.img, tc.node)
			if d.Refused != tc.want {
				t.Errorf("refused %q\nwant    %q", d.Refused, tc.want)
			}
			if tc.want != "" && d.Security != nil {
				t.Errorf("a refused container has a Security %+v", d.Security)
			}
		})
	}
}

func TestWhatTheProcessGivesUp(t *testing.T) {
	for _, tc := range []struct {
		name     string
		psc      *corev1.PodSecurityContext
		csc      *corev1.SecurityContext
		img      Image
		node     Node
		want     *proc.Security
		warnings []string // substrings, one per warning
	}{
		{"no context: nothing", nil, nil, gateImg, rootNode, nil, nil},
		{"Knative's queue container: the image's user, no capability, no_new_privs, read-only; seccomp warned",
			nil, queueenv.SecurityContext(), gateImg, rootNode,
			&proc.Security{UID: u32(65532), GID: u32(65532), Caps: []proc.Capability{}, NoNewPrivs: true, ReadOnlyRoot: true, Writable: []string{"/var/cache/app"}},
			[]string{"seccompProfile RuntimeDefault is not enforced"}},
		{"the container's runAsUser beats the pod's; the pod's group and supplementary groups",
			&corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1), RunAsGroup: ptr.To[int64](2), SupplementalGroups: []int64{5, 4}, FSGroup: ptr.To[int64](4)},
			&corev1.SecurityContext{RunAsUser: ptr.To[int64](3)}, rootImg, rootNode,
			&proc.Security{UID: u32(3), GID: u32(2), Groups: []uint32{4, 5}}, nil},
		{"readOnlyRootFilesystem keeps the writable volume mounts writable", nil,
			&corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true)}, hostProg, rootNode,
			&proc.Security{ReadOnlyRoot: true, Writable: []string{"/var/cache/app"}}, nil},
		{"runAsUser over the image's user: group 0, not the image's group", nil,
			&corev1.SecurityContext{RunAsUser: ptr.To[int64](1000)}, gateImg, rootNode,
			&proc.Security{UID: u32(1000), GID: u32(0)}, nil},
		{"runAsUser without a group: group 0, as in a container", nil,
			&corev1.SecurityContext{RunAsUser: ptr.To[int64](1000)}, hostProg, rootNode,
			&proc.Security{UID: u32(1000), GID: u32(0)}, nil},
		{"drop ALL, add NET_BIND_SERVICE", nil,
			&corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_BIND_SERVICE"}}}, hostProg, rootNode,
			&proc.Security{Caps: []proc.Capability{10}}, nil},
		{"allowPrivilegeEscalation true or unset sets nothing", nil,
			&corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(true)}, hostProg, rootNode, nil, nil},
		{"a non-root node: no_new_privs only, the rest warned", nil,
			&corev1.SecurityContext{RunAsUser: ptr.To[int64](65532), ReadOnlyRootFilesystem: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false),
				Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}}, hostProg, userNode,
			&proc.Security{NoNewPrivs: true},
			[]string{"runs as the node's user 1000:1000, not 65532:0", "capabilities.add [NET_ADMIN] is not granted", "readOnlyRootFilesystem is not enforced"}},
		{"procMount, sysctls and AppArmor are warned",
			&corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}}},
			&corev1.SecurityContext{ProcMount: ptr.To(corev1.UnmaskedProcMount),
				AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}}, hostProg, rootNode, nil,
			[]string{"appArmorProfile RuntimeDefault", "procMount Unmasked", "sysctls are not set"}},
		{"privileged on a root node keeps every capability: add and drop are ignored, as a container runtime ignores them",
			nil, &corev1.SecurityContext{Privileged: ptr.To(true), RunAsUser: ptr.To[int64](0),
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_ADMIN"}}}, hostProg, rootNode,
			&proc.Security{UID: u32(0), GID: u32(0)}, nil},
		{"privileged on a node that is not root is warned", nil,
			&corev1.SecurityContext{Privileged: ptr.To(true)}, hostProg, userNode, nil,
			[]string{"privileged is not enforced: the node is not root"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, c := pod(tc.psc, tc.csc)
			d := Decide(p, c, tc.img, tc.node)
			if d.Refused != "" {
				t.Fatalf("refused: %s", d.Refused)
			}
			if !reflect.DeepEqual(d.Security, tc.want) {
				t.Errorf("security %s\nwant     %s", show(d.Security), show(tc.want))
			}
			if len(d.Warnings) != len(tc.warnings) {
				t.Fatalf("warnings %q, want %d: %q", d.Warnings, len(tc.warnings), tc.warnings)
			}
			for i, w := range tc.warnings {
				if !strings.Contains(d.Warnings[i], w) {
					t.Errorf("warning %d: %q, want it to say %q", i, d.Warnings[i], w)
				}
			}
		})
	}
}

func show(s *proc.Security) string {
	if s == nil {
		return "<nil>"
	}
	d := func(p *uint32) any {
		if p == nil {
			return "-"
		}
		return *p
	}
	return fmt.Sprintf("uid=%v gid=%v groups=%v caps=%v (nil %v) nnp=%v ro=%v rw=%q",
		d(s.UID), d(s.GID), s.Groups, s.Caps, s.Caps == nil, s.NoNewPrivs, s.ReadOnlyRoot, s.Writable)
}

// FuzzImageUser feeds any image user (a config's User is free text) to
// Decide: it never panics, a refusal gives up nothing, and a user it
// switches to is one this machine can have.
func FuzzImageUser(f *testing.F) {
	for _, s := range []string{"", "0", "65532", "65532:65532", "nobody", "app:app", "1:x", "-1", "4294967296:1", ":", "0:0:0", "２"} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, user string, nonRoot bool) {
		p, c := pod(nil, &corev1.SecurityContext{RunAsNonRoot: ptr.To(nonRoot), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}})
		d := Decide(p, c, Image{Known: true, User: user}, rootNode)
		if d.Refused != "" {
			if d.Security != nil || !strings.HasPrefix(d.Refused, "container has runAsNonRoot") {
				t.Fatalf("refused %q with %+v", d.Refused, d.Security)
			}
			return
		}
		if d.Security == nil || d.Security.Caps == nil {
			t.Fatalf("drop ALL not applied: %+v", d.Security)
		}
		if nonRoot && (d.Security.UID == nil || *d.Security.UID == 0) {
			t.Fatalf("runAsNonRoot passed for user %q but runs as %s", user, show(d.Security))
		}
	})
}
