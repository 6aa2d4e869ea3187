package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreclient "k8s.io/client-go/kubernetes/typed/core/v1"
)

// certStore keeps the PKI in one Secret of podgate's namespace, so that
// every replica and every restart serves the same certificate and the
// webhook configurations need one caBundle. Replicas that change the
// Secret at the same moment are ordered by its resourceVersion: the
// loser reads the winner's certificates and takes them.
type certStore struct {
	secrets coreclient.SecretInterface
	name    string
	policy  certPolicy
	// serving is what the TLS server hands out; swapped whole.
	serving atomic.Pointer[servedCert]
}

// servedCert is the certificate being served and its parsed leaf.
type servedCert struct {
	tls  *tls.Certificate
	leaf *x509.Certificate
}

// maxConflicts bounds how often sync re-reads the Secret after losing a
// race; more means something keeps rewriting it.
const maxConflicts = 5

// sync reads the Secret, advances its certificates to now, and writes
// them back if they changed. It returns the state and when it next has
// something to do.
func (c *certStore) sync(ctx context.Context, now time.Time) (pkiState, time.Time, error) {
	for range maxConflicts {
		secret, err := c.secrets.Get(ctx, c.name, metav1.GetOptions{})
		notFound := apierrors.IsNotFound(err)
		if err != nil && !notFound {
			return pkiState{}, time.Time{}, fmt.Errorf("read Secret %s: %w", c.name, err)
		}
		var data map[string][]byte
		if !notFound {
			data = secret.Data
		}
		state, changed, wake, err := c.policy.advance(parseState(data), now)
		if err != nil {
			return pkiState{}, time.Time{}, err
		}
		if !changed {
			return state, wake, nil
		}
		if notFound {
			err = c.create(ctx, state)
		} else {
			err = c.update(ctx, secret, state)
		}
		switch {
		case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
			continue // another replica was first: take its certificates
		case err != nil:
			return pkiState{}, time.Time{}, err
		}
		return state, wake, nil
	}
	return pkiState{}, time.Time{}, fmt.Errorf("the Secret %s changed under podgate %d times in a row", c.name, maxConflicts)
}

// create makes the Secret. podgate's RBAC does not allow it (a rule
// limited to one name cannot grant create), so the deployment ships the
// Secret empty; creating it is for a webhook run with broader rights,
// such as a developer's kubeconfig.
func (c *certStore) create(ctx context.Context, state pkiState) error {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: c.name, Labels: map[string]string{"app.kubernetes.io/name": "podgate", "app.kubernetes.io/component": "webhook"}},
		Type:       corev1.SecretTypeOpaque,
		Data:       state.data(),
	}
	_, err := c.secrets.Create(ctx, secret, metav1.CreateOptions{FieldManager: fieldManager})
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("the Secret %s does not exist and podgate may not create it (deploy/base/webhook ships it empty): %w", c.name, err)
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Secret %s: %w", c.name, err)
	}
	return err
}

// update writes the certificates, keeping any other key of the Secret.
func (c *certStore) update(ctx context.Context, secret *corev1.Secret, state pkiState) error {
	secret = secret.DeepCopy()
	if secret.Data == nil {
		secret.Data = map[string][]byte{}
	}
	// The next CA's keys are dropped when it is promoted.
	delete(secret.Data, secretNextCACert)
	delete(secret.Data, secretNextCAKey)
	maps.Copy(secret.Data, state.data())
	_, err := c.secrets.Update(ctx, secret, metav1.UpdateOptions{FieldManager: fieldManager})
	if err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("update Secret %s: %w", c.name, err)
	}
	return err
}

// serve makes the state's serving certificate the one handed out. It
// reports whether the certificate changed.
func (c *certStore) serve(state pkiState) (bool, error) {
	if cur := c.serving.Load(); cur != nil && cur.leaf.Equal(state.serving.Cert) {
		return false, nil
	}
	cert, err := state.serving.TLSCertificate()
	if err != nil {
		return false, fmt.Errorf("serving certificate: %w", err)
	}
	c.serving.Store(&servedCert{tls: cert, leaf: state.serving.Cert})
	return true, nil
}

// current is the certificate being served, nil before the first serve.
func (c *certStore) current() *x509.Certificate {
	if cur := c.serving.Load(); cur != nil {
		return cur.leaf
	}
	return nil
}

// getCertificate is the TLS server's: every handshake takes the
// certificate being served at that moment, so a rotation needs no
// restart and connections already open keep theirs.
func (c *certStore) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	cur := c.serving.Load()
	if cur == nil {
		return nil, errors.New("no serving certificate yet")
	}
	return cur.tls, nil
}
