package objstore

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// BenchmarkStatusUpdateWithWatchers measures one pod status write fanned out
// to N watchers (each gets its own copy), the node agent's hot path.
func BenchmarkStatusUpdateWithWatchers(b *testing.B) {
	for _, watchers := range []int{0, 1, 4} {
		b.Run(fmt.Sprintf("watchers=%d", watchers), func(b *testing.B) {
			s := New(Options{WatchBuffer: 1 << 20})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if _, err := s.Pods.Create(pod("default", "web")); err != nil {
				b.Fatal(err)
			}
			done := make(chan struct{})
			for range watchers {
				ch, _ := s.Pods.Watch(ctx, s.ResourceVersion())
				go func() {
					for range ch {
					}
					done <- struct{}{}
				}()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				_, err := s.Pods.Modify("default", "web", func(p *corev1.Pod) error {
					p.Status.Message = fmt.Sprint(i)
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			cancel()
			for range watchers {
				<-done
			}
		})
	}
}
