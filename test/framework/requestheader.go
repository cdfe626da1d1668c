package framework

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// configureRequestHeader gives the apiserver a request-header (front proxy)
// client CA, as kubeadm does, so that it publishes one in
// kube-system/extension-apiserver-authentication. Every component with
// delegated authentication (placement-scheduler, kube-scheduler,
// kube-controller-manager) watches that ConfigMap for both CA bundles and,
// without the request-header one, logs "Unhandled Error ... missing content
// for CA bundle ...requestheader-client-ca-file" every few seconds: noise
// that looks like failure on a healthy start. Nothing here proxies through
// the apiserver, so the CA's key is thrown away; no client certificate is
// ever signed with it.
func (e *Env) configureRequestHeader(args *envtest.Arguments) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generating the front-proxy CA key: %w", err)
	}
	ca, err := cert.NewSelfSignedCACert(cert.Config{CommonName: "front-proxy-ca"}, key)
	if err != nil {
		return fmt.Errorf("creating the front-proxy CA: %w", err)
	}
	pem, err := cert.EncodeCertificates(ca)
	if err != nil {
		return err
	}
	path := filepath.Join(e.dir, "front-proxy-ca.crt")
	if err := os.WriteFile(path, pem, 0o644); err != nil {
		return err
	}
	// kubeadm's values.
	args.Set("requestheader-client-ca-file", path)
	args.Set("requestheader-allowed-names", "front-proxy-client")
	args.Set("requestheader-username-headers", "X-Remote-User")
	args.Set("requestheader-group-headers", "X-Remote-Group")
	args.Set("requestheader-extra-headers-prefix", "X-Remote-Extra-")
	return nil
}
