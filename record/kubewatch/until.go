package kubewatch

import (
	"context"
	"fmt"
	"io"
	"time"
)

// firstListWait bounds the first lists of `podgate record`: an API server
// that does not answer in a minute is reported, not waited for.
const firstListWait = time.Minute

// RecordUntilDone is `podgate record` once its file is open: it watches
// with cfg until ctx ends (Ctrl-C), saying on stderr what it records, then
// takes the watch's last look so changes made just before the stop are in.
// A ctx that ends during the first lists is a clean stop: a recording of
// nothing.
func RecordUntilDone(ctx context.Context, cfg Config, stderr io.Writer) error {
	syncCtx, cancel := context.WithTimeout(ctx, firstListWait)
	w, err := Start(syncCtx, cfg)
	cancel()
	switch {
	case err != nil && ctx.Err() != nil:
		return nil
	case err != nil:
		return err
	}
	where := "namespace " + cfg.Namespace
	if cfg.Namespace == "" {
		where = "every namespace"
	}
	fmt.Fprintf(stderr, "podgate: recording %s until Ctrl-C\n", where)
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return w.Stop(stopCtx)
}
