package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/podgate/podgate/record/timeline"
	"github.com/podgate/podgate/record/timeline/render"
)

func init() { register(newTimelineCmd) }

func newTimelineCmd() *cobra.Command {
	var (
		o           timeline.Options
		format, out string
	)
	cmd := &cobra.Command{
		Use:   "timeline FILE [--format text|html|svg] [-o OUT]",
		Short: "Show a recording on one time axis: a table, or a picture of swimlanes",
		Long: `Show a recording (podgate run --record FILE, podgate record) on one time
axis. text: what happened, with the endpoints after each step, the probe
failures collapsed, the requests summarised per interval by pod, and after
each kill the requests sent to that pod while it was not ready or being
killed. html: one self-contained page, zoomable by time range (drag across
it), that prints on white. svg: the picture alone. FILE - reads standard input.
--from and --to bound the view (durations from the recording's start).

Exit status: 0 ok, 1 unreadable recording (the line is named) or output
not writable, 2 usage error. See docs/timeline.md.`,
		Example: `  podgate timeline run.jsonl
  podgate timeline run.jsonl --format html -o run.html
  podgate timeline run.jsonl --format svg --from 10s --to 40s --interval 500ms`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(render.Formats, format) {
				return usageErrorf("--format %q: want one of %s", format, strings.Join(render.Formats, ", "))
			}
			if err := o.Check(); err != nil {
				return usageErrorf("%v", err)
			}
			return renderTimeline(args[0], format, out, o, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&format, "format", "text", "text, html (a self-contained page) or svg (the picture alone)")
	f.StringVarP(&out, "output", "o", "-", "write to this file instead of standard output")
	f.DurationVar(&o.From, "from", 0, "start the view this long after the recording's start")
	f.DurationVar(&o.To, "to", 0, "end the view this long after the recording's start (default: its end)")
	f.DurationVar(&o.Interval, "interval", 0, "width of a request summary (text) or histogram bar (picture); default: fits the range")
	return cmd
}

func renderTimeline(file, format, out string, o timeline.Options, stdin io.Reader, stdout, stderr io.Writer) error {
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return invalidf("%v", err)
	}
	h, facts, warning, err := timeline.Parse(data)
	if err != nil {
		return invalidf("%s: %v", file, err)
	}
	if warning != "" {
		fmt.Fprintf(stderr, "podgate timeline: %s: %s\n", file, warning)
	}
	var buf bytes.Buffer
	if err := render.Recording(&buf, format, h, facts, o); err != nil {
		return invalidf("%s: %v", file, err)
	}
	if out == "-" {
		_, err = stdout.Write(buf.Bytes())
	} else {
		err = os.WriteFile(out, buf.Bytes(), 0o644)
	}
	if err != nil {
		return invalidf("%v", err)
	}
	return nil
}
