package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/podgate/podgate/test/bench/internal/benchenv"
)

// startLimit bounds the cluster's start.
const startLimit = 5 * time.Minute

// cluster is a running `podgate cluster up`.
type cluster struct {
	k      *kubernetes.Clientset
	log    string
	cmd    *exec.Cmd
	exited chan error
}

// startCluster starts `podgate cluster up` in dir with room for maxPods
// pods and waits until podgate is installed on it.
func startCluster(ctx context.Context, o options, dir string, maxPods int) (*cluster, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "cluster-up.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	c := &cluster{log: logf.Name(), exited: make(chan error, 1)}
	c.cmd = exec.Command(o.podgate, "cluster", "up", "--dir", dir, "--pod-cidr", o.cidr, "--max-pods", strconv.Itoa(maxPods),
		"--listen", "127.0.0.1:0", "--front-door", "127.0.0.1:0")
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { c.exited <- c.cmd.Wait() }()
	if c.k, err = benchenv.WaitNodeReady(ctx, dir, startLimit, c.exited); err == nil {
		err = benchenv.WaitFrontDoor(ctx, c.log, startLimit, c.exited)
	}
	if err != nil {
		c.stop()
		return nil, fmt.Errorf("%w (log: %s)", err, c.log)
	}
	return c, nil
}

// stop ends the cluster as Ctrl-C does and waits for it.
func (c *cluster) stop() {
	_ = c.cmd.Process.Signal(os.Interrupt)
	select {
	case <-c.exited:
	case <-time.After(3 * time.Minute):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
}
