package local

import (
	"errors"
	"net"
)

// closers is the one stack of cleanups of a run: each part, once started,
// pushes how to stop it, and close stops them last first, so that what
// started later (and may depend on what came before) stops first.
type closers struct {
	fns []func() error
}

func (c *closers) push(f func() error) { c.fns = append(c.fns, f) }

// close runs every cleanup, last pushed first, and joins their errors.
// A listener closed twice (its server took it and closed it already) is
// no error.
func (c *closers) close() error {
	var errs []error
	for i := len(c.fns) - 1; i >= 0; i-- {
		if err := c.fns[i](); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	c.fns = nil
	return errors.Join(errs...)
}
