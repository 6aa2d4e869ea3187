package testapp_test

import (
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/podgate/podgate/test/testapp"
)

// BenchmarkReadyzLoopback probes /readyz over real loopback sockets with
// keep-alive connections, logging each probe as the binaries do (to
// io.Discard here): the app must sustain far more than the lab's 1,000
// probes/s.
func BenchmarkReadyzLoopback(b *testing.B) {
	for _, bc := range []struct {
		name   string
		logger *slog.Logger
	}{
		{"logged", slog.New(slog.NewTextHandler(io.Discard, nil))},
		{"unlogged", nil},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := testapp.Start(testapp.Config{}, bc.logger)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Shutdown(b.Context())
			tr := &http.Transport{MaxIdleConnsPerHost: 64}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr}
			url := s.URL() + "/readyz"
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := c.Get(url)
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						b.Errorf("GET /readyz = %d", resp.StatusCode)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "probes/s")
		})
	}
}
