package contract

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestGatePortsComeFromTheGateContainer(t *testing.T) {
	declared := corev1.Container{Name: GateContainerName, Ports: []corev1.ContainerPort{
		{Name: "http", ContainerPort: 18012}, {Name: GateAdminPortName, ContainerPort: 18022},
	}}
	for _, tt := range []struct {
		name      string
		spec      corev1.PodSpec
		wantName  string
		wantPort  int32
		wantAdmin int32
	}{
		{"a gate as a native sidecar declares its ports",
			corev1.PodSpec{InitContainers: []corev1.Container{declared}, Containers: []corev1.Container{{Name: "app"}}},
			"http", 18012, 18022},
		{"a gate as a regular container declares its ports",
			corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}, declared}},
			"http", 18012, 18022},
		{"a gate that declares no port is on queue-proxy's ports, without admin",
			corev1.PodSpec{Containers: []corev1.Container{{Name: GateContainerName}}},
			"http", GatePort, 0},
		{"a pod without a gate has no admin port",
			corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}}},
			"http", GatePort, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := GateContainer(&tt.spec)
			name, port := GateTrafficPort(g)
			if name != tt.wantName || port != tt.wantPort {
				t.Errorf("GateTrafficPort = %q %d, want %q %d", name, port, tt.wantName, tt.wantPort)
			}
			if admin := GateAdminPortOf(g); admin != tt.wantAdmin {
				t.Errorf("GateAdminPortOf = %d, want %d", admin, tt.wantAdmin)
			}
		})
	}
}

func TestKubeProbeUserAgentIsTheKubeletsFormat(t *testing.T) {
	if got := KubeProbeUserAgent("1.37"); got != "kube-probe/1.37" {
		t.Fatalf("KubeProbeUserAgent = %q", got)
	}
}
