package local

import (
	"errors"
	"fmt"
	"net"
	"reflect"
	"testing"
)

func TestClosersStopLastStartedFirstAndJoinErrors(t *testing.T) {
	var order []string
	var c closers
	boom := errors.New("boom")
	c.push(func() error { order = append(order, "api"); return nil })
	c.push(func() error { order = append(order, "door"); return boom })
	c.push(func() error { order = append(order, "listener"); return fmt.Errorf("close: %w", net.ErrClosed) })
	c.push(func() error { order = append(order, "agent"); return nil })
	err := c.close()
	if want := []string{"agent", "listener", "door", "api"}; !reflect.DeepEqual(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
	if !errors.Is(err, boom) || errors.Is(err, net.ErrClosed) {
		t.Errorf("error %v: want boom, and a listener closed twice not to count", err)
	}
	if err := c.close(); err != nil {
		t.Errorf("second close: %v, want nothing left to run", err)
	}
}
