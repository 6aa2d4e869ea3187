package podlogs

import (
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func TestParseOptionsReadsTheAPIServersParameters(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, query string
		want        string // the options, printed, or the 400's words
	}{
		{name: "all of them", query: "follow=true&previous=false&timestamps=1&tailLines=3&limitBytes=10&sinceSeconds=5",
			want: "follow true, previous false, timestamps true, tail 3, limit 10, since 5s"},
		{name: "sinceTime in RFC 3339", query: "sinceTime=2026-11-29T10:00:00Z", want: "sinceTime 2026-11-29T10:00:00Z"},
		{name: "a sinceTime that is not RFC 3339", query: "sinceTime=yesterday", want: `400: sinceTime "yesterday": want an RFC 3339 time`},
		{name: "sinceSeconds and sinceTime together", query: "sinceSeconds=1&sinceTime=2026-11-29T10:00:00Z", want: "400: sinceSeconds and sinceTime: at most one may be set"},
		{name: "a negative tailLines", query: "tailLines=-1", want: `400: tailLines "-1": want an integer >= 0`},
		{name: "a follow that is not a bool", query: "follow=yes", want: `400: follow "yes": want true or false`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, _ := url.ParseQuery(tc.query)
			opts, err := ParseOptions(q)
			var got string
			switch {
			case err != nil:
				if !apierrors.IsBadRequest(err) {
					t.Fatalf("error %v is not a 400", err)
				}
				got = "400: " + err.Error()
			case opts.SinceTime != nil:
				got = "sinceTime " + opts.SinceTime.UTC().Format(time.RFC3339)
			default:
				got = strings.Join([]string{
					"follow " + fmtBool(opts.Follow), "previous " + fmtBool(opts.Previous), "timestamps " + fmtBool(opts.Timestamps),
					"tail " + fmtInt(opts.TailLines), "limit " + fmtInt(opts.LimitBytes), "since " + fmtInt(opts.SinceSeconds) + "s"}, ", ")
			}
			if got != tc.want {
				t.Errorf("%s: %q, want %q", tc.query, got, tc.want)
			}
		})
	}
}

func fmtBool(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func fmtInt(p *int64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatInt(*p, 10)
}
