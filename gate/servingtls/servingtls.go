// Package servingtls is the gate's serving certificate for its TLS port
// (system-internal TLS): whether it is mounted, and a tls.Config
// GetCertificate that picks up a rotated certificate at the next
// handshake, without a restart.
//
// queue-proxy re-reads its files on a one-minute ticker (comparing their
// SHA-256), so after a rotation it hands out the old certificate for up to
// a minute. The Certificate here looks at the files on each handshake
// instead: two stat calls (a few microseconds, against a handshake's
// signature of tens to hundreds), and only when a file's identity changed
// (device and inode, size, modification time) are they read and parsed
// again. That needs no goroutine, no ticker and no clock — nothing to stop
// or leak — and the first connection after a rotation gets the new
// certificate. Kubernetes replaces a secret volume's files by swapping
// its ..data symlink to a new directory, so every rotation gives the
// files new inodes; a file rewritten in place is seen by its size or
// modification time (a rewrite of the same size within the file system's
// timestamp granularity is not).
package servingtls

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// Mounted tells whether dir holds both certFile and keyFile, as
// queue-proxy decides at its start whether to serve TLS at all: both
// files exist (symbolic links followed). An error other than a missing
// file is returned (queue-proxy stops on it).
func Mounted(dir, certFile, keyFile string) (bool, error) {
	for _, name := range []string{certFile, keyFile} {
		path := filepath.Join(dir, name)
		if _, err := os.Stat(path); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return false, nil
			}
			return false, fmt.Errorf("serving certificate: %w", err)
		}
	}
	return true, nil
}

// Certificate is a serving certificate read from two files, read again
// when they change. Create it with Load.
type Certificate struct {
	certPath, keyPath string
	log               *slog.Logger

	cur atomic.Pointer[state]
	mu  sync.Mutex // one reload at a time
}

// state is what a handshake needs: the certificate handed out and the
// files' identities when they were last looked at.
type state struct {
	cert *tls.Certificate
	sum  [sha256.Size]byte // of the certificate's and key's bytes
	// certFile, keyFile: the files as last examined, loaded or not (a
	// pair that failed to parse is not read again until one changes).
	certFile, keyFile os.FileInfo
	// statErr is the last error looking at the files ("" when none), so
	// a file that stays missing is logged once.
	statErr string
}

// Load reads the certificate and key (PEM, as a kubernetes.io/tls secret
// holds them) and returns the Certificate that serves them; an error
// names the files. log gets a line for each reload and each file problem.
func Load(certPath, keyPath string, log *slog.Logger) (*Certificate, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Certificate{certPath: certPath, keyPath: keyPath, log: log}
	certFile, keyFile, err := c.stat()
	if err != nil {
		return nil, err
	}
	cert, sum, err := c.read()
	if err != nil {
		return nil, err
	}
	c.cur.Store(&state{cert: cert, sum: sum, certFile: certFile, keyFile: keyFile})
	return c, nil
}

// GetCertificate is tls.Config's: the current certificate, read again
// first when its files changed. When they cannot be read or do not parse,
// the certificate loaded last is handed out (and the problem logged
// once), as queue-proxy keeps its last good one.
func (c *Certificate) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	cur := c.cur.Load()
	certFile, keyFile, err := c.stat()
	if err == nil && cur.statErr == "" && sameFile(cur.certFile, certFile) && sameFile(cur.keyFile, keyFile) {
		return cur.cert, nil
	}
	if err != nil && err.Error() == cur.statErr {
		return cur.cert, nil
	}
	return c.reload(), nil
}

// Current is the certificate handed out now (without looking at the
// files).
func (c *Certificate) Current() *tls.Certificate { return c.cur.Load().cert }

// reload looks at the files again under the lock (another handshake may
// have reloaded them meanwhile) and reads them when they changed.
func (c *Certificate) reload() *tls.Certificate {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.cur.Load()
	next := *cur
	certFile, keyFile, err := c.stat()
	switch {
	case err != nil:
		if err.Error() != cur.statErr {
			c.log.Warn("serving certificate unreadable; still serving the one loaded last", "error", err)
		}
		next.statErr = err.Error()
		c.cur.Store(&next)
		return cur.cert
	case sameFile(cur.certFile, certFile) && sameFile(cur.keyFile, keyFile):
		if cur.statErr != "" {
			next.statErr = ""
			c.cur.Store(&next)
		}
		return cur.cert
	}
	// The identities are taken before the contents: a change between the
	// two is seen at the next handshake, and read again then.
	next.certFile, next.keyFile, next.statErr = certFile, keyFile, ""
	cert, sum, err := c.read()
	switch {
	case err != nil:
		c.log.Warn("serving certificate changed but does not load; still serving the one loaded last", "error", err)
	case sum != cur.sum:
		next.cert, next.sum = cert, sum
		c.log.Info("serving certificate reloaded", "cert", c.certPath, "subject", cert.Leaf.Subject.String(),
			"notAfter", cert.Leaf.NotAfter)
	}
	c.cur.Store(&next)
	return next.cert
}

// stat returns the files' identities (symbolic links followed).
func (c *Certificate) stat() (certFile, keyFile os.FileInfo, err error) {
	if certFile, err = os.Stat(c.certPath); err != nil {
		return nil, nil, fmt.Errorf("serving certificate: %w", err)
	}
	if keyFile, err = os.Stat(c.keyPath); err != nil {
		return nil, nil, fmt.Errorf("serving certificate key: %w", err)
	}
	return certFile, keyFile, nil
}

// read reads and parses the pair; sum identifies its contents.
func (c *Certificate) read() (*tls.Certificate, [sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	certPEM, err := os.ReadFile(c.certPath)
	if err != nil {
		return nil, sum, fmt.Errorf("serving certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(c.keyPath)
	if err != nil {
		return nil, sum, fmt.Errorf("serving certificate key: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, sum, fmt.Errorf("serving certificate %s with key %s: %w", c.certPath, c.keyPath, err)
	}
	sum = sha256.Sum256(bytes.Join([][]byte{certPEM, keyPEM}, []byte{0}))
	return &cert, sum, nil
}

// sameFile: the same file, unchanged in size and modification time.
func sameFile(a, b os.FileInfo) bool {
	return a != nil && b != nil && os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}
