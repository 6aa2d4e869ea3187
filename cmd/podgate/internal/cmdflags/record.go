package cmdflags

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/podgate/podgate/internal/command"
	"github.com/podgate/podgate/record"
)

// DefaultRecordLimit bounds a recording unless --record-limit says
// otherwise: hours of a busy run, far less than a disk.
const DefaultRecordLimit = "256Mi"

// RecordFlags are --record-limit and the file flag of `podgate run
// --record` and `podgate record -o`.
type RecordFlags struct {
	File  string
	Limit string
	// FileFlag names the file flag in messages.
	FileFlag string
}

func (r *RecordFlags) BindLimit(f *pflag.FlagSet) {
	f.StringVar(&r.Limit, "record-limit", DefaultRecordLimit,
		"size bound of the recording in bytes (suffixes Ki, Mi, Gi, k, M, G; at least 4Ki; 0 for none); when it is hit the recording ends with a truncated line")
}

// LimitBytes is --record-limit in bytes, or a usage error.
func (r *RecordFlags) LimitBytes() (int64, error) {
	n, err := record.ParseLimit(r.Limit)
	if err != nil {
		return 0, command.Usagef("--record-limit %v", err)
	}
	return n, nil
}

// Check refuses, as usage errors, a bound that is malformed or given
// without a file.
func (r *RecordFlags) Check(limitSet bool) error {
	if limitSet && r.File == "" {
		return command.Usagef("--record-limit needs %s FILE", r.FileFlag)
	}
	_, err := r.LimitBytes()
	return err
}

// Open creates the file and starts the recording with its header. A file
// that cannot be created, or a bound too small for the header, is
// invalid input. When the bound is hit podgate says so on stderr, once.
func (r *RecordFlags) Open(source string, stderr io.Writer) (*record.File, error) {
	limit, err := r.LimitBytes()
	if err != nil {
		return nil, err
	}
	f, err := record.Create(r.File, record.Header{Source: source, Detail: CommandLine()}, limit)
	if err != nil {
		return nil, command.Invalidf("%s: %v", r.FileFlag, err)
	}
	f.OnTruncate(func() {
		fmt.Fprintf(stderr, "podgate: the recording %s reached --record-limit %s (%d bytes): later facts were dropped; raise --record-limit (0 for no bound)\n", r.File, r.Limit, limit)
	})
	return f, nil
}

// CommandLine is how podgate was started, for the header's Detail.
func CommandLine() string {
	args := make([]string, len(os.Args))
	for i, a := range os.Args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$") {
			a = strconv.Quote(a)
		}
		args[i] = a
	}
	return strings.Join(args, " ")
}
