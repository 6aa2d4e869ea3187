package lab_test

import (
	"strings"
	"testing"

	"github.com/podgate/podgate/lab"
)

func TestTimelineListsMarksInOrder(t *testing.T) {
	tl := lab.NewTimeline()
	a := tl.Mark("toggled off")
	b := tl.Mark("service not ready")
	if b.Before(a) || a.Before(tl.Origin()) {
		t.Errorf("marks out of order: origin %v, %v, %v", tl.Origin(), a, b)
	}
	s := tl.String()
	if i, j := strings.Index(s, "toggled off"), strings.Index(s, "service not ready"); i < 0 || j < i {
		t.Errorf("timeline:\n%s", s)
	}
}
