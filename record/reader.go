package record

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
)

// maxLine bounds one line: a fact is small; a longer line is not ours.
const maxLine = 1 << 20

// Read reads a whole recording: its header and its facts in file order.
// Errors name the line. A recording cut short mid-line (podgate killed)
// keeps every complete line before it and reports the cut as an error
// alongside them.
func Read(r io.Reader) (Header, []Fact, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	var (
		h     Header
		facts []Fact
		n     int
	)
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var f Fact
		dec := json.NewDecoder(bytes.NewReader(line))
		if err := dec.Decode(&f); err != nil {
			return h, facts, fmt.Errorf("recording line %d: %w", n, err)
		}
		if n == 1 {
			if f.Kind != KindHeader || f.Header == nil {
				return h, nil, fmt.Errorf("recording line 1: not a podgate recording (no header line; want kind %q)", KindHeader)
			}
			h = *f.Header
			if h.Format != FormatName {
				return h, nil, fmt.Errorf("recording line 1: format %q, want %q", h.Format, FormatName)
			}
			if h.Version != Version {
				return h, nil, fmt.Errorf("recording line 1: format version %d; this podgate reads version %d", h.Version, Version)
			}
			continue
		}
		if err := f.check(); err != nil {
			return h, facts, fmt.Errorf("recording line %d: %w", n, err)
		}
		facts = append(facts, f)
	}
	if err := sc.Err(); err != nil {
		return h, facts, fmt.Errorf("recording line %d: %w", n+1, err)
	}
	if n == 0 {
		return h, nil, fmt.Errorf("recording is empty: no header line")
	}
	return h, facts, nil
}

// check is the rule that a fact of kind K carries exactly the payload K.
func (f Fact) check() error {
	payloads := map[Kind]bool{
		KindHeader: f.Header != nil, KindProbe: f.Probe != nil, KindContainer: f.State != nil,
		KindEvent: f.Event != nil, KindCondition: f.Condition != nil, KindEndpoint: f.Endpoint != nil,
		KindGate: f.Gate != nil, KindRoute: f.Route != nil, KindRequest: f.Request != nil,
		KindMark: f.Mark != nil, KindTruncated: f.Truncated != nil,
	}
	has, known := payloads[f.Kind]
	if !known {
		// A newer minor writer's kind: readers skip what they do not know
		// only if it says so in a version bump; version 1 knows them all.
		return fmt.Errorf("unknown fact kind %q", f.Kind)
	}
	if f.Kind == KindHeader {
		return fmt.Errorf("a second header")
	}
	if !has {
		return fmt.Errorf("fact of kind %q without its %q payload", f.Kind, f.Kind)
	}
	for k, set := range payloads {
		if set && k != f.Kind {
			return fmt.Errorf("fact of kind %q carries a %q payload too", f.Kind, k)
		}
	}
	if f.Time.IsZero() {
		return fmt.Errorf("fact of kind %q without a time", f.Kind)
	}
	return nil
}

// Sorted returns facts ordered by time, ties kept in file order: one time
// axis for facts that were written as they were learned.
func Sorted(facts []Fact) []Fact {
	out := slices.Clone(facts)
	slices.SortStableFunc(out, func(a, b Fact) int { return a.Time.Compare(b.Time) })
	return out
}
