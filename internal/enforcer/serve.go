package enforcer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/server"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/apiserver/pkg/server/mux"
	apiserveroptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"
	netutils "k8s.io/utils/net"

	violationsv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/violations/v1alpha1"
)

// ServingOptions are the flags of the enforcer's HTTPS endpoints, the ones
// kube-scheduler takes: --secure-port, --bind-address, the certificate
// (--tls-cert-file, --cert-dir, ...), and delegated authentication and
// authorization (--authentication-kubeconfig, --authorization-kubeconfig,
// ...). Every request is authenticated and authorized by the apiserver
// (TokenReview, the cluster's client CA, SubjectAccessReview), except the
// health paths.
type ServingOptions struct {
	SecureServing  *apiserveroptions.SecureServingOptions
	Authentication *apiserveroptions.DelegatingAuthenticationOptions
	Authorization  *apiserveroptions.DelegatingAuthorizationOptions
}

// NewServingOptions returns kube-scheduler's defaults on port 10261: a
// self-signed certificate held in memory unless one is given, in-cluster
// credentials for the delegation when no kubeconfig is given (and no
// failure when there are none), /healthz, /livez and /readyz open.
func NewServingOptions() *ServingOptions {
	o := &ServingOptions{
		SecureServing:  apiserveroptions.NewSecureServingOptions(),
		Authentication: apiserveroptions.NewDelegatingAuthenticationOptions(),
		Authorization:  apiserveroptions.NewDelegatingAuthorizationOptions(),
	}
	o.SecureServing.BindPort = violationsv1alpha1.DefaultSecurePort
	o.SecureServing.ServerCert.CertDirectory = ""
	o.SecureServing.ServerCert.PairName = Component
	o.Authentication.TolerateInClusterLookupFailure = true
	o.Authentication.RemoteKubeConfigFileOptional = true
	o.Authorization.RemoteKubeConfigFileOptional = true
	return o
}

// AddFlags adds the serving, authentication and authorization flags.
func (o *ServingOptions) AddFlags(fs *pflag.FlagSet) {
	o.SecureServing.AddFlags(fs)
	o.Authentication.AddFlags(fs)
	o.Authorization.AddFlags(fs)
}

// Serving is what ServingOptions.Apply built: the bound listener and its
// certificate, the authenticator and the authorizer.
type Serving struct {
	info  *server.SecureServingInfo
	authn authenticator.Request
	authz authorizer.Authorizer
}

// Apply validates the options, binds the port and builds the delegated
// authenticator and authorizer. kubeconfig (the enforcer's own; empty:
// in-cluster) is their identity when --authentication-kubeconfig or
// --authorization-kubeconfig is not given. It returns nil when
// --secure-port is 0: nothing is served.
func (o *ServingOptions) Apply(kubeconfig string) (*Serving, error) {
	var errs []error
	errs = append(errs, o.SecureServing.Validate()...)
	errs = append(errs, o.Authentication.Validate()...)
	errs = append(errs, o.Authorization.Validate()...)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if o.SecureServing.BindPort == 0 {
		return nil, nil
	}
	// A process outside the cluster (a test, a laptop) delegates with the
	// credentials it runs with, as it has no in-cluster ones.
	if o.Authentication.RemoteKubeConfigFile == "" {
		o.Authentication.RemoteKubeConfigFile = kubeconfig
	}
	if o.Authorization.RemoteKubeConfigFile == "" {
		o.Authorization.RemoteKubeConfigFile = kubeconfig
	}
	if err := o.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", nil, []net.IP{netutils.ParseIPSloppy("127.0.0.1")}); err != nil {
		return nil, fmt.Errorf("creating a self-signed serving certificate: %w", err)
	}
	s := &Serving{}
	if err := o.SecureServing.ApplyTo(&s.info); err != nil {
		return nil, fmt.Errorf("--secure-port, --bind-address: %w", err)
	}
	var authn server.AuthenticationInfo
	if err := o.Authentication.ApplyTo(&authn, s.info, nil); err != nil {
		_ = s.info.Listener.Close()
		return nil, fmt.Errorf("delegated authentication (--authentication-kubeconfig): %w", err)
	}
	var authz server.AuthorizationInfo
	if err := o.Authorization.ApplyTo(&authz); err != nil {
		_ = s.info.Listener.Close()
		return nil, fmt.Errorf("delegated authorization (--authorization-kubeconfig): %w", err)
	}
	s.authn, s.authz = authn.Authenticator, authz.Authorizer
	return s, nil
}

// Addr is the address the endpoints listen on.
func (s *Serving) Addr() net.Addr { return s.info.Listener.Addr() }

// serve serves e's endpoints, with checks as the health checks of
// /healthz, /livez and /readyz, until stop is called (stop waits for the
// server to finish).
func (s *Serving) serve(ctx context.Context, e *Enforcer, checks []healthz.HealthChecker) (stop func(), err error) {
	logger := klog.FromContext(ctx)
	stopCh := make(chan struct{})
	handler := secure(endpoints(e, checks, stopCh), s.authn, s.authz)
	stopped, _, err := s.info.Serve(handler, 5*time.Second, stopCh)
	if err != nil {
		close(stopCh)
		return nil, fmt.Errorf("serving on %s: %w", s.Addr(), err)
	}
	logger.Info("Serving the endpoints", "address", s.Addr())
	return func() { close(stopCh); <-stopped }, nil
}

// endpoints serves /metrics, /violations (the last pass's reports, as
// JSON) and the health paths, each running checks (/readyz also fails once
// stopping closes).
func endpoints(e *Enforcer, checks []healthz.HealthChecker, stopping <-chan struct{}) http.Handler {
	m := mux.NewPathRecorderMux(Component)
	healthz.InstallHandler(m, checks...)
	healthz.InstallLivezHandler(m, checks...)
	healthz.InstallReadyzHandler(m, append(checks[:len(checks):len(checks)], healthz.NewShutdownHealthz(stopping))...)
	m.Handle("/metrics", metrics.HandlerFor(e.metrics.registry, metrics.HandlerOpts{}))
	m.HandleFunc("/violations", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(e.Reports())
	})
	return m
}

// secure wraps h in the filters kube-scheduler's endpoints run behind:
// a request is authenticated (a failure answers 401), then authorized as
// a non-resource request (a refusal answers 403).
func secure(h http.Handler, authn authenticator.Request, authz authorizer.Authorizer) http.Handler {
	resolver := &apirequest.RequestInfoFactory{}
	h = genericapifilters.WithAuthorization(h, authz, scheme.Codecs)
	h = genericapifilters.WithAuthentication(h, authn, genericapifilters.Unauthorized(scheme.Codecs), nil, nil)
	h = genericapifilters.WithRequestInfo(h, resolver)
	h = genericapifilters.WithCacheControl(h)
	h = genericfilters.WithHTTPLogging(h)
	h = genericfilters.WithPanicRecovery(h, resolver)
	return h
}
