package kubeletapi

import (
	"net/http"

	"github.com/podgate/podgate/node/podlogs"
)

// containerLogs is /containerLogs/{ns}/{pod}/{container}: the API
// server's pods/log parameters (podlogs.ParseOptions), the output the node
// keeps, flushed as it comes when following.
func (s *Server) containerLogs(w http.ResponseWriter, r *http.Request) {
	opts, err := podlogs.ParseOptions(r.URL.Query())
	if err != nil {
		s.writeError(w, err)
		return
	}
	opts.Container = r.PathValue("container")
	rc, err := s.cfg.Pods.Logs(r.Context(), r.PathValue("ns"), r.PathValue("pod"), opts)
	if err != nil {
		s.writeError(w, err)
		return
	}
	defer rc.Close()
	podlogs.Stream(w, rc, opts.LimitBytes)
}
