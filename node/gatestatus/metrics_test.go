package gatestatus

import "github.com/prometheus/client_golang/prometheus/testutil"

func (m *metrics) apiWatchesOpenValue() float64 { return testutil.ToFloat64(m.apiWatchesOpen) }
