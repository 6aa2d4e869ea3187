package probe

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestWriteReport(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		o    Outcome
		text string
	}{
		{"a success in one attempt", Outcome{Result: Success, Attempts: 1, Duration: 1234567 * time.Nanosecond},
			"Result:    success\nDuration:  1.23ms (1 attempt)\nKubelet:   counts as success\n"},
		{"a failure with its message, trailing newlines trimmed", Outcome{Result: Failure, Message: "HTTP probe failed with statuscode: 500\n", Attempts: 1, Duration: time.Millisecond},
			"Result:    failure\nMessage:   HTTP probe failed with statuscode: 500\nDuration:  1ms (1 attempt)\nKubelet:   counts as failure toward failureThreshold\n"},
		{"an error after three attempts is dropped", Outcome{Result: Error, Message: "boom", Err: errors.New("boom"), Attempts: 3, Duration: 2 * time.Millisecond},
			"Result:    error\nMessage:   boom\nDuration:  2ms (3 attempts)\nKubelet:   dropped: the probe errored, the container's state is unchanged\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var text strings.Builder
			if err := WriteReport(&text, "text", tc.o); err != nil {
				t.Fatal(err)
			}
			if text.String() != tc.text {
				t.Errorf("text:\n%s\nwant:\n%s", text.String(), tc.text)
			}
			var js strings.Builder
			if err := WriteReport(&js, "json", tc.o); err != nil {
				t.Fatal(err)
			}
			var rep Report
			if err := json.Unmarshal([]byte(js.String()), &rep); err != nil {
				t.Fatal(err)
			}
			if rep.Result != tc.o.Result.String() || rep.Attempts != tc.o.Attempts || rep.Kubelet != KubeletVerdict(tc.o.Result) ||
				(tc.o.Err != nil) != (rep.Error != "") {
				t.Errorf("json report %+v for %+v", rep, tc.o)
			}
		})
	}
}
