package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	admissionclient "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
)

// fieldManager names podgate's writes in managedFields.
const fieldManager = "podgate-webhook"

// bundlePatcher puts the caBundle into podgate's two webhook
// configurations. It sets clientConfig.caBundle of every webhook in them,
// whether the webhook is reached through a Service or by URL: the field
// is the same for both.
type bundlePatcher struct {
	mutating       admissionclient.MutatingWebhookConfigurationInterface
	validating     admissionclient.ValidatingWebhookConfigurationInterface
	mutatingName   string
	validatingName string
}

// errConfigurationMissing marks a webhook configuration that does not
// exist (yet): nothing calls podgate through it, so nothing is wrong, but
// the caBundle must go in as soon as it appears.
var errConfigurationMissing = errors.New("webhook configuration not found")

// ensure patches the bundle into both configurations where it differs.
// It reads before it writes, so a steady state costs two reads.
func (b *bundlePatcher) ensure(ctx context.Context, bundle []byte) error {
	var errs []error
	if b.mutatingName != "" {
		errs = append(errs, b.ensureOne(ctx, "MutatingWebhookConfiguration", b.mutatingName, bundle,
			func() ([]string, [][]byte, error) {
				cfg, err := b.mutating.Get(ctx, b.mutatingName, metav1.GetOptions{})
				if err != nil {
					return nil, nil, err
				}
				names, bundles := webhookBundles(cfg.Webhooks, func(w admissionregistrationv1.MutatingWebhook) (string, []byte) {
					return w.Name, w.ClientConfig.CABundle
				})
				return names, bundles, nil
			},
			func(patch []byte) error {
				_, err := b.mutating.Patch(ctx, b.mutatingName, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: fieldManager})
				return err
			}))
	}
	if b.validatingName != "" {
		errs = append(errs, b.ensureOne(ctx, "ValidatingWebhookConfiguration", b.validatingName, bundle,
			func() ([]string, [][]byte, error) {
				cfg, err := b.validating.Get(ctx, b.validatingName, metav1.GetOptions{})
				if err != nil {
					return nil, nil, err
				}
				names, bundles := webhookBundles(cfg.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) (string, []byte) {
					return w.Name, w.ClientConfig.CABundle
				})
				return names, bundles, nil
			},
			func(patch []byte) error {
				_, err := b.validating.Patch(ctx, b.validatingName, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: fieldManager})
				return err
			}))
	}
	return errors.Join(errs...)
}

// webhookBundles lists the webhooks' names and caBundles, by index.
func webhookBundles[W any](hooks []W, get func(W) (string, []byte)) ([]string, [][]byte) {
	names, bundles := make([]string, len(hooks)), make([][]byte, len(hooks))
	for i, h := range hooks {
		names[i], bundles[i] = get(h)
	}
	return names, bundles
}

// ensureOne patches one configuration. The JSON patch tests each
// webhook's name at its index before it sets the bundle there, so a
// configuration reordered between the read and the write is refused, not
// patched in the wrong place; the next sync reads it again.
func (b *bundlePatcher) ensureOne(ctx context.Context, kind, name string, bundle []byte,
	get func() ([]string, [][]byte, error), patch func([]byte) error) error {
	names, bundles, err := get()
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s %s: %w", kind, name, errConfigurationMissing)
	}
	if err != nil {
		return fmt.Errorf("read %s %s: %w", kind, name, err)
	}
	var ops []map[string]any
	for i := range names {
		if bytes.Equal(bundles[i], bundle) {
			continue
		}
		at := "/webhooks/" + strconv.Itoa(i)
		ops = append(ops,
			map[string]any{"op": "test", "path": at + "/name", "value": names[i]},
			// add sets the member whether or not it is there (RFC 6902).
			map[string]any{"op": "add", "path": at + "/clientConfig/caBundle", "value": bundle})
	}
	if len(ops) == 0 {
		return nil
	}
	js, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	if err := patch(js); err != nil {
		return fmt.Errorf("patch the caBundle of %s %s: %w", kind, name, err)
	}
	return nil
}
