package apiserver

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// statusOf turns any error into the Status the API server would send: a
// StatusError (what objstore and well-behaved PodDeleter/LogSource
// implementations return) as it is, anything else as a 500.
func statusOf(err error) metav1.Status {
	var st apierrors.APIStatus
	var out metav1.Status
	if errors.As(err, &st) {
		out = st.Status()
	} else {
		out = apierrors.NewInternalError(err).ErrStatus
	}
	out.Kind, out.APIVersion = "Status", "v1"
	if out.Status == "" {
		out.Status = metav1.StatusFailure
	}
	if out.Code == 0 {
		out.Code = http.StatusInternalServerError
	}
	return out
}

func writeError(w http.ResponseWriter, log *slog.Logger, err error) {
	st := statusOf(err)
	if st.Code >= 500 {
		log.Error("control API request failed", "err", err)
	}
	writeJSON(w, int(st.Code), st)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	// An encoding error here means the client went away; nothing to tell it.
	_ = json.NewEncoder(w).Encode(v)
}
