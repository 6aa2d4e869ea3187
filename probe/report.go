package probe

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// Report is one tick's Outcome as `podgate probe` prints it, with what the
// kubelet would do with the result.
type Report struct {
	Result     string  `json:"result"`
	Message    string  `json:"message,omitempty"`
	Error      string  `json:"error,omitempty"`
	Attempts   int     `json:"attempts"`
	DurationMS float64 `json:"durationMs"`
	// Kubelet says what the kubelet would do with the result.
	Kubelet string `json:"kubelet"`
}

// KubeletVerdict says what the kubelet does with a result.
func KubeletVerdict(r Result) string {
	switch r {
	case Success:
		return "counts as success"
	case Warning:
		return "counts as success, recorded as a ProbeWarning event"
	case Failure:
		return "counts as failure toward failureThreshold"
	default:
		return "dropped: the probe errored, the container's state is unchanged"
	}
}

// WriteReport writes o's Report to w: as indented JSON for format "json",
// else as aligned text lines (Result, Message, Duration, Kubelet).
func WriteReport(w io.Writer, format string, o Outcome) error {
	rep := Report{
		Result:     o.Result.String(),
		Message:    o.Message,
		Attempts:   o.Attempts,
		DurationMS: float64(o.Duration.Microseconds()) / 1000,
		Kubelet:    KubeletVerdict(o.Result),
	}
	if o.Err != nil {
		rep.Error = o.Err.Error()
	}
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	attempts := "attempts"
	if o.Attempts == 1 {
		attempts = "attempt"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Result:    %s\n", rep.Result)
	if rep.Message != "" {
		fmt.Fprintf(&b, "Message:   %s\n", strings.TrimRight(rep.Message, "\n"))
	}
	fmt.Fprintf(&b, "Duration:  %s (%d %s)\n", o.Duration.Round(10*time.Microsecond), o.Attempts, attempts)
	fmt.Fprintf(&b, "Kubelet:   %s\n", rep.Kubelet)
	_, err := io.WriteString(w, b.String())
	return err
}
