// Package k8s holds msgx's Kubernetes manifests (kustomize base and overlays) and the test that
// renders every overlay and checks it against the binaries' real settings and HTTP surface.
// It is a separate module so the Kubernetes client types stay out of the service's dependencies.
// Its package rehearse runs the production overlay for real (make rehearse); its tests import
// the service module's development packages (pkg/dev/...) through the workspace (go.work).
package k8s
