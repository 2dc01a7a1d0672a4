// Package k8s holds msgx's Kubernetes manifests (kustomize base and overlays) and the test that
// renders every overlay and checks it against the binaries' real settings and HTTP surface.
// It is a separate module so the Kubernetes client types stay out of the service's dependencies.
package k8s
