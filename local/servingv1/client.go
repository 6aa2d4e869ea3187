package servingv1

import (
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"
)

// scheme decodes what the serving.knative.dev/v1 endpoints answer: the
// Service, its list, and the Status and watch events of every group.
var scheme = runtime.NewScheme()

func init() {
	scheme.AddKnownTypes(SchemeGroupVersion, &Service{}, &ServiceList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
}

// Client is client-go's typed client for serving.knative.dev/v1, as
// Knative's generated clientset would be, built on client-go's generic
// typed client so lists, gets and watches behave as the core clientset's.
type Client struct{ rc rest.Interface }

// ServiceInterface reads and writes the Services of one namespace (all
// namespaces for "").
type ServiceInterface = *gentype.ClientWithList[*Service, *ServiceList]

// NewForConfigAndClient returns a client for the API server of c, over hc
// (shared with the core clientset, so one transport serves both).
func NewForConfigAndClient(c *rest.Config, hc *http.Client) (*Client, error) {
	cfg := rest.CopyConfig(c)
	cfg.GroupVersion = &SchemeGroupVersion
	cfg.APIPath = "/apis"
	cfg.ContentType = runtime.ContentTypeJSON
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("%s client: %w", SchemeGroupVersion, err)
	}
	return &Client{rc: rc}, nil
}

// Services is the Services of namespace ("" for all namespaces).
func (c *Client) Services(namespace string) ServiceInterface {
	return gentype.NewClientWithList[*Service, *ServiceList]("services", c.rc, metav1.ParameterCodec, namespace,
		func() *Service { return &Service{} }, func() *ServiceList { return &ServiceList{} })
}
