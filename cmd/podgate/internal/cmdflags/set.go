package cmdflags

import (
	"time"

	"github.com/podgate/podgate/internal/command"
)

// TextFlag and DurationFlag are flag values CheckSet looks at.
type (
	TextFlag struct {
		Flag, Value string
	}
	DurationFlag struct {
		Flag  string
		Value time.Duration
	}
)

// CheckSet refuses, as usage errors, an empty text and a duration that is
// not positive: to a package's Config the zero value means its default,
// but written on the command line it is a mistake.
func CheckSet(texts []TextFlag, durations []DurationFlag) error {
	for _, f := range texts {
		if f.Value == "" {
			return command.Usagef("%s must not be empty", f.Flag)
		}
	}
	for _, d := range durations {
		if d.Value <= 0 {
			return command.Usagef("%s %s: must be positive", d.Flag, d.Value)
		}
	}
	return nil
}
