package timeline

import (
	"bytes"
	"fmt"

	"github.com/podgate/podgate/record"
)

// Parse reads a recording from its bytes. A recording whose last line
// was cut short (podgate killed in the middle of writing it) is read up
// to its last complete line, and warning says so; any other flaw is the
// reader's error, naming the line.
func Parse(data []byte) (h record.Header, facts []record.Fact, warning string, err error) {
	h, facts, err = record.Read(bytes.NewReader(data))
	if err == nil || len(data) == 0 || data[len(data)-1] == '\n' {
		return h, facts, "", err
	}
	cut := bytes.LastIndexByte(data, '\n')
	if cut < 0 {
		return h, facts, "", err
	}
	h2, facts2, err2 := record.Read(bytes.NewReader(data[:cut+1]))
	if err2 != nil {
		return h, facts, "", err
	}
	lines := bytes.Count(data[:cut+1], []byte("\n"))
	return h2, facts2, fmt.Sprintf("the recording's last line (%d) is cut short, as when podgate is killed while writing; showing the %d lines before it", lines+1, lines), nil
}
