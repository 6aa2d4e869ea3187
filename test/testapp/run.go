package testapp

import (
	"context"
	"log/slog"
	"time"
)

// shutdownTimeout bounds how long in-flight requests may hold up exit once
// serving has ended; the kubelet's SIGKILL would come after 30 s anyway.
const shutdownTimeout = 5 * time.Second

// Run starts the app and serves until ctx ends (the binaries end it on
// SIGTERM or SIGINT); see Server.ServeUntil. On the way out it removes the
// exec file it made, unless another app has written that path since.
func Run(ctx context.Context, cfg Config, logger *slog.Logger) error {
	s, err := Start(cfg, logger)
	if err != nil {
		return err
	}
	defer s.removeOwnExecFile()
	return s.ServeUntil(ctx)
}

// ServeUntil blocks until ctx ends, keeps serving for SleepOnTerm, then
// shuts the server down. A termination that goes to plan returns nil; a
// listener that fails meanwhile shuts everything down and returns its error.
func (s *Server) ServeUntil(ctx context.Context) error {
	select {
	case <-ctx.Done():
	case err := <-s.Err():
		_ = s.shutdownNow()
		return err
	}
	if d := s.cfg.SleepOnTerm; d > 0 {
		s.log.Info("termination requested: serving on for sleep-on-term", "sleepOnTerm", d)
		t := s.clock.NewTimer(d)
		select {
		case <-t.C():
		case err := <-s.Err():
			t.Stop()
			_ = s.shutdownNow()
			return err
		}
	} else {
		s.log.Info("termination requested")
	}
	s.log.Info("shutting down")
	if err := s.shutdownNow(); err != nil {
		return err
	}
	s.log.Info("shut down")
	return nil
}

func (s *Server) shutdownNow() error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	return s.Shutdown(ctx)
}
