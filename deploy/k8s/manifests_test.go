package k8s_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// repoRoot is the service module's root, relative to this module.
const repoRoot = "../.."

var overlays = []string{"dev", "production"}

// roles are the Deployments (the four stages and the console); each runs the binary of the same
// name.
var roles = []string{"ingest", "processor", "dispatcher", "jobs", "console"}

// devBroker is the component of the development Kafka broker (cmd/devbroker): one Deployment,
// dev overlay only, behind the Service the dispatcher's MSGX_KAFKA_BROKERS names.
const devBroker = "devbroker"

// egressPorts is what each workload talks to (docs/spec.md §2, §14): PostgreSQL for all, the mailbox for
// ingest, processor and jobs, Kafka for the dispatcher, DNS for everyone. Nothing else.
var egressPorts = map[string][]int32{
	"ingest":     {53, 3306, 5432},
	"processor":  {53, 3306, 5432},
	"dispatcher": {53, 5432, 9092, 9093},
	"jobs":       {53, 3306, 5432},
	"migrate":    {53, 5432},
	"console":    {53, 5432},
	devBroker:    {},
}

// overlayEgressPorts are the ports an overlay adds to egressPorts: in production the console's
// OpenID Connect provider (HTTPS), for its optional log-in.
var overlayEgressPorts = map[string]map[string][]int32{"production": {"console": {443}}}

// clientPorts are the ports clients (not the monitoring namespace) reach: ingest's API and the
// console's pages, each apart from the ops port 8080.
var clientPorts = map[string]int32{"ingest": 8091, "console": 8092}

// egressSetting names the key of overlays/production/egress.yaml that narrows egress to a port.
var egressSetting = map[int32]string{5432: "postgres", 3306: "mysql", 9092: "kafka", 9093: "kafka", 443: "oidc"}

// egressSettings reads the production overlay's CIDR settings (a local-config ConfigMap).
func egressSettings(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("overlays", "production", "egress.yaml"))
	require.NoError(t, err)
	var cm corev1.ConfigMap
	require.NoError(t, yaml.UnmarshalStrict(b, &cm))
	require.Equal(t, "true", cm.Annotations["config.kubernetes.io/local-config"], "egress.yaml is a setting, not a deployed object")
	for _, k := range []string{"postgres", "mysql", "kafka", "oidc"} {
		_, n, err := net.ParseCIDR(cm.Data[k])
		require.NoError(t, err, "egress.yaml: %s", k)
		ones, _ := n.Mask.Size()
		require.Positive(t, ones, "egress.yaml: %s must not be the whole internet", k)
	}
	return cm.Data
}

// checkEgressCIDRs: every database or broker rule goes only to its setting's CIDR.
func checkEgressCIDRs(t *testing.T, id string, rules []networkingv1.NetworkPolicyEgressRule, cidrs map[string]string) {
	t.Helper()
	for _, rule := range rules {
		key := ""
		for _, p := range rule.Ports {
			if k, ok := egressSetting[p.Port.IntVal]; ok {
				require.True(t, key == "" || key == k, "%s: one rule mixes %s and %s", id, key, k)
				key = k
			}
		}
		if key == "" {
			continue // DNS: to kube-dns by selector
		}
		require.Len(t, rule.To, 1, "%s: the %s rule must go to its CIDR only", id, key)
		require.NotNil(t, rule.To[0].IPBlock, "%s: the %s rule must name an ipBlock", id, key)
		require.Equal(t, cidrs[key], rule.To[0].IPBlock.CIDR, "%s: the %s rule's CIDR is egress.yaml's %s", id, key, key)
		require.Empty(t, rule.To[0].IPBlock.Except, id)
	}
}

// secretSettings must come from a Secret, never from a ConfigMap or a literal.
var secretSettings = []string{"MSGX_PG_URL", "MSGX_MYSQL_DSN", "MSGX_KAFKA_SASL_PASSWORD", "MSGX_CONSOLE_SESSION_KEY", "MSGX_CONSOLE_TOKENS", "MSGX_CONSOLE_OIDC_CLIENT_SECRET"}

// rolePasswordEnv are the password variables of msgxctl roles apply (MSGX_ROLE_PASSWORD_<ROLE>).
var rolePasswordEnv = regexp.MustCompile(`^MSGX_ROLE_PASSWORD_([A-Z]+)$`)

// hashSuffix is the content hash kustomize appends to generated ConfigMap and Secret names.
var hashSuffix = regexp.MustCompile(`-[bcdfghkmt2456789]{10}$`)

// rendered is one overlay's output, decoded into the Kubernetes API types.
type rendered struct {
	overlay         string
	deployments     []*appsv1.Deployment
	jobs            []*batchv1.Job
	services        []*corev1.Service
	configMaps      map[string]*corev1.ConfigMap
	secrets         map[string]*corev1.Secret
	secretOrig      map[string]string // rendered Secret name → name before kustomize's hash suffix
	serviceAccounts map[string]*corev1.ServiceAccount
	pdbs            []*policyv1.PodDisruptionBudget
	netpols         []*networkingv1.NetworkPolicy
}

// workload is a Deployment or the migration Job: a named pod template.
type workload struct {
	kind, name, component string
	pod                   *corev1.PodTemplateSpec
}

func (r *rendered) workloads() []workload {
	var out []workload
	for _, d := range r.deployments {
		out = append(out, workload{"Deployment", d.Name, d.Spec.Template.Labels["app.kubernetes.io/component"], &d.Spec.Template})
	}
	for _, j := range r.jobs {
		out = append(out, workload{"Job", j.Name, j.Spec.Template.Labels["app.kubernetes.io/component"], &j.Spec.Template})
	}
	return out
}

// render runs kustomize in-process on overlays/<name> and decodes every object strictly (an
// unknown field or a kind outside the list below fails).
func render(t *testing.T, overlay string) *rendered {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join("overlays", overlay))
	require.NoError(t, err, "kustomize build overlays/%s", overlay)
	r := &rendered{
		overlay: overlay, configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{},
		secretOrig: map[string]string{}, serviceAccounts: map[string]*corev1.ServiceAccount{},
	}
	for _, res := range m.Resources() {
		y, err := res.AsYAML()
		require.NoError(t, err)
		gvk := res.GetApiVersion() + "/" + res.GetKind()
		id := fmt.Sprintf("%s: %s %s", overlay, gvk, res.GetName())
		decode := func(obj any, tm *metav1.TypeMeta) {
			require.NoError(t, yaml.UnmarshalStrict(y, obj), "%s: strict decode", id)
			require.Equal(t, gvk, tm.APIVersion+"/"+tm.Kind, id)
		}
		switch gvk {
		case "apps/v1/Deployment":
			o := &appsv1.Deployment{}
			decode(o, &o.TypeMeta)
			r.deployments = append(r.deployments, o)
		case "batch/v1/Job":
			o := &batchv1.Job{}
			decode(o, &o.TypeMeta)
			r.jobs = append(r.jobs, o)
		case "v1/Service":
			o := &corev1.Service{}
			decode(o, &o.TypeMeta)
			r.services = append(r.services, o)
		case "v1/ConfigMap":
			o := &corev1.ConfigMap{}
			decode(o, &o.TypeMeta)
			r.configMaps[o.Name] = o
		case "v1/Secret":
			o := &corev1.Secret{}
			decode(o, &o.TypeMeta)
			r.secrets[o.Name] = o
			r.secretOrig[o.Name] = hashSuffix.ReplaceAllString(o.Name, "")
		case "v1/ServiceAccount":
			o := &corev1.ServiceAccount{}
			decode(o, &o.TypeMeta)
			r.serviceAccounts[o.Name] = o
		case "policy/v1/PodDisruptionBudget":
			o := &policyv1.PodDisruptionBudget{}
			decode(o, &o.TypeMeta)
			r.pdbs = append(r.pdbs, o)
		case "networking.k8s.io/v1/NetworkPolicy":
			o := &networkingv1.NetworkPolicy{}
			decode(o, &o.TypeMeta)
			r.netpols = append(r.netpols, o)
		default:
			t.Fatalf("%s: kind not expected in msgx's manifests", id)
		}
	}
	return r
}

// settings parses docs/configuration.md's table (generated from pkg/config): variable → default.
func settings(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "configuration.md"))
	require.NoError(t, err)
	row := regexp.MustCompile("(?m)^\\| `(MSGX_[A-Z0-9_]+)` \\| `([^`]*)` \\|")
	out := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = m[2]
	}
	require.Greater(t, len(out), 20, "docs/configuration.md: settings table not found")
	return out
}

// servedPaths are the GET paths pkg/obs serves on every binary's MSGX_HTTP_ADDR.
func servedPaths(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "pkg", "obs", "obs.go"))
	require.NoError(t, err)
	var out []string
	for _, m := range regexp.MustCompile(`"GET (/[a-z]+)"`).FindAllStringSubmatch(string(b), -1) {
		out = append(out, m[1])
	}
	require.Subset(t, out, []string{"/healthz", "/readyz", "/metrics"}, "pkg/obs/obs.go routes")
	return out
}

// imageBinaries are the binaries each image build puts into the msgx image: the Makefile's
// IMAGE_PKGS (make image) and deploy/image/Containerfile (the from-source build) must agree.
func imageBinaries(t *testing.T) []string {
	t.Helper()
	var sets [][]string
	for _, f := range []struct{ path, block string }{
		{filepath.Join(repoRoot, "Makefile"), `\nIMAGE_PKGS := [^\n]*`},
		{filepath.Join(repoRoot, "deploy", "image", "Containerfile"), `(?s)go build.*?\n\S`},
	} {
		b, err := os.ReadFile(f.path)
		require.NoError(t, err)
		block := regexp.MustCompile(f.block).FindString(string(b))
		require.NotEmpty(t, block, "%s: the image build", f.path)
		var names []string
		for _, m := range regexp.MustCompile(`\./cmd/([a-z]+)`).FindAllStringSubmatch(block, -1) {
			names = append(names, m[1])
		}
		slices.Sort(names)
		sets = append(sets, names)
	}
	require.Equal(t, sets[0], sets[1], "the Makefile's IMAGE_PKGS and deploy/image/Containerfile build different binaries")
	return sets[0]
}

// binaryExists reports whether cmd/<name> is a main package of the service module.
func binaryExists(name string) bool {
	_, err := os.Stat(filepath.Join(repoRoot, "cmd", name, "main.go"))
	return err == nil
}

// effectiveEnv is what the binary in c sees: documented defaults, then envFrom ConfigMaps, then
// env entries. A Secret reference shows as "secret:<name>/<key>".
// daemons are the binaries that run as services (daemon.LimitMemory applies their memory limit).
var daemons = []string{"ingest", "processor", "dispatcher", "jobs", "console"}

func (r *rendered) effectiveEnv(t *testing.T, id string, c corev1.Container, defaults map[string]string) map[string]string {
	t.Helper()
	env := map[string]string{}
	for k, v := range defaults {
		env[k] = v
	}
	for _, ef := range c.EnvFrom {
		require.Nil(t, ef.SecretRef, "%s: envFrom a Secret hides which settings it sets; use env secretKeyRef", id)
		require.NotNil(t, ef.ConfigMapRef, id)
		cm, ok := r.configMaps[ef.ConfigMapRef.Name]
		require.True(t, ok, "%s: envFrom ConfigMap %q is not in the overlay", id, ef.ConfigMapRef.Name)
		for k, v := range cm.Data {
			env[k] = v
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			env[e.Name] = "secret:" + e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		case e.Name == "GOMEMLIMIT" && e.ValueFrom.ResourceFieldRef != nil:
			env[e.Name] = "resource:" + e.ValueFrom.ResourceFieldRef.Resource
		default:
			t.Fatalf("%s: env %s: only literal values and secretKeyRef are used", id, e.Name)
		}
	}
	return env
}

func TestOverlays(t *testing.T) {
	t.Parallel()
	known := settings(t)
	paths := servedPaths(t)
	out := map[string]*rendered{}
	for _, o := range overlays {
		out[o] = render(t, o)
	}
	for _, o := range overlays {
		r := out[o]
		t.Run(o, func(t *testing.T) {
			t.Parallel()
			checkWorkloads(t, r)
			checkSettings(t, r, known)
			checkContainers(t, r, known, paths)
			checkPDBs(t, r)
			checkNetworkPolicies(t, r)
			checkIngestService(t, r)
			checkDevBroker(t, r)
			checkSecrets(t, r, out["dev"])
		})
	}
}

// checkWorkloads: one Deployment per binary (≥ 2 replicas, selector = template labels), the
// migration Job running msgxctl migrate, ServiceAccounts without API tokens.
func checkWorkloads(t *testing.T, r *rendered) {
	var names []string
	brokers := 0
	for _, d := range r.deployments {
		id := r.overlay + ": Deployment " + d.Name
		if d.Spec.Template.Labels["app.kubernetes.io/component"] == devBroker {
			brokers++
			require.Equal(t, "dev", r.overlay, "%s: the development broker runs in dev only", id)
			require.Equal(t, "msgx-"+devBroker, d.Name, id)
			require.NotNil(t, d.Spec.Replicas, id)
			require.Equal(t, int32(1), *d.Spec.Replicas, "%s: one broker node", id)
			require.Equal(t, appsv1.RecreateDeploymentStrategyType, d.Spec.Strategy.Type, "%s: never two brokers on one data set", id)
			require.Len(t, d.Spec.Template.Spec.Containers, 1, id)
			require.Equal(t, []string{"/usr/local/bin/" + devBroker}, d.Spec.Template.Spec.Containers[0].Command, id)
			continue
		}
		names = append(names, d.Name)
		require.NotNil(t, d.Spec.Replicas, id)
		require.GreaterOrEqual(t, *d.Spec.Replicas, int32(2), "%s: a standby per role takes over when the leader dies", id)
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		require.NoError(t, err, id)
		require.True(t, sel.Matches(labels.Set(d.Spec.Template.Labels)), "%s: selector does not match its pod template", id)
		comp := d.Spec.Template.Labels["app.kubernetes.io/component"]
		require.Equal(t, "msgx-"+comp, d.Name, id)
		require.Len(t, d.Spec.Template.Spec.Containers, 1, id)
		require.Equal(t, []string{"/usr/local/bin/" + comp}, d.Spec.Template.Spec.Containers[0].Command, "%s runs its own binary", id)
	}
	want := make([]string, 0, len(roles))
	for _, role := range roles {
		want = append(want, "msgx-"+role)
	}
	require.ElementsMatch(t, want, names, r.overlay+": one Deployment per binary")
	if r.overlay == "dev" {
		require.Equal(t, 1, brokers, "dev: one development broker")
	}

	require.Len(t, r.jobs, 1, r.overlay+": the migration Job")
	j := r.jobs[0]
	require.Equal(t, "msgx-migrate", j.Name)
	// First the migration as the schema owner, then the roles and grants of pkg/roles.
	require.Len(t, j.Spec.Template.Spec.InitContainers, 1)
	require.Equal(t, []string{"/usr/local/bin/msgxctl", "migrate"}, j.Spec.Template.Spec.InitContainers[0].Command)
	require.Len(t, j.Spec.Template.Spec.Containers, 1)
	require.Equal(t, []string{"/usr/local/bin/msgxctl", "roles", "apply"}, j.Spec.Template.Spec.Containers[0].Command)
	var passwords []string
	for _, e := range j.Spec.Template.Spec.Containers[0].Env {
		if m := rolePasswordEnv.FindStringSubmatch(e.Name); m != nil {
			passwords = append(passwords, strings.ToLower(m[1]))
		}
	}
	require.ElementsMatch(t, append(slices.Clone(roles), "reader", "admin"), passwords,
		r.overlay+": roles apply sets the password of every role a pod or msgxctl logs in as")
	require.Equal(t, "pre", j.Labels["msgx.io/rollout"], "the Job is applied in the pre-rollout step")

	for _, w := range r.workloads() {
		sa := w.pod.Spec.ServiceAccountName
		acc, ok := r.serviceAccounts[sa]
		require.True(t, ok, "%s: %s %s: ServiceAccount %q missing", r.overlay, w.kind, w.name, sa)
		require.NotNil(t, acc.AutomountServiceAccountToken)
		require.False(t, *acc.AutomountServiceAccountToken, "msgx never calls the Kubernetes API")
		require.NotNil(t, w.pod.Spec.AutomountServiceAccountToken)
		require.False(t, *w.pod.Spec.AutomountServiceAccountToken)
	}
}

// checkSettings: every ConfigMap key is a real setting with a value of the setting's type, and
// no ConfigMap carries a credential.
func checkSettings(t *testing.T, r *rendered, known map[string]string) {
	require.NotEmpty(t, r.configMaps, r.overlay)
	for name, cm := range r.configMaps {
		for k, v := range cm.Data {
			id := fmt.Sprintf("%s: ConfigMap %s: %s", r.overlay, name, k)
			def, ok := known[k]
			require.True(t, ok, "%s is not a setting in docs/configuration.md", id)
			require.NotContains(t, secretSettings, k, "%s is a credential: use a Secret", id)
			require.NoError(t, typeCheck(def, v), id)
		}
		require.Empty(t, cm.BinaryData, name)
	}
}

// typeCheck checks v has the type the documented default has (duration, bool, integer).
func typeCheck(def, v string) error {
	switch {
	case def == "true" || def == "false":
		if _, err := strconv.ParseBool(v); err != nil {
			return fmt.Errorf("want a bool, got %q", v)
		}
	case regexp.MustCompile(`^-?[0-9]+$`).MatchString(def):
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return fmt.Errorf("want an integer, got %q", v)
		}
	case regexp.MustCompile(`^[0-9.]+(ns|us|ms|s|m|h)([0-9.]+(ns|us|ms|s|m|h))*$`).MatchString(def):
		if _, err := time.ParseDuration(v); err != nil {
			return fmt.Errorf("want a Go duration, got %q", v)
		}
	}
	return nil
}

// checkContainers: env names are real settings, credentials come from Secrets, resources and
// securityContext are set, probes (startup, liveness, readiness) hit /healthz and /readyz on the
// port of MSGX_HTTP_ADDR, a preStop sleep lets the endpoints drop the pod before SIGTERM, and the
// grace period outlasts the preStop sleep, MSGX_SHUTDOWN_DRAIN and MSGX_SHUTDOWN_TIMEOUT.
func checkContainers(t *testing.T, r *rendered, known map[string]string, paths []string) {
	pgSecrets := map[string]string{}
	inImage := imageBinaries(t)
	for _, w := range r.workloads() {
		spec := w.pod.Spec
		for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
			id := fmt.Sprintf("%s: %s %s container %s", r.overlay, w.kind, w.name, c.Name)
			require.True(t, binaryExists(filepath.Base(c.Command[0])), "%s: %s is not a binary of cmd/", id, c.Command[0])
			if w.component != devBroker { // its own image (make image-devbroker)
				require.Contains(t, inImage, filepath.Base(c.Command[0]), "%s: %s is not built into the msgx image (Makefile image target)", id, c.Command[0])
			}
			if w.component == devBroker {
				require.Empty(t, c.Env, "%s: the broker reads no MSGX_ setting", id)
				require.Empty(t, c.EnvFrom, id)
				checkResources(t, id, c.Resources)
				checkSecurity(t, id, spec.SecurityContext, c.SecurityContext)
				continue // checkDevBroker checks the rest
			}

			if slices.Contains(daemons, filepath.Base(c.Command[0])) {
				require.True(t, slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "GOMEMLIMIT" }),
					"%s: GOMEMLIMIT unset: the binary keeps its 44 MiB default (daemon.LimitMemory) whatever the container's limit", id)
			}
			for _, e := range c.Env {
				if e.Name == "GOMEMLIMIT" {
					// The Go runtime's soft memory limit, not a setting: the container's own.
					ref := e.ValueFrom
					require.True(t, ref != nil && ref.ResourceFieldRef != nil && ref.ResourceFieldRef.Resource == "limits.memory",
						"%s: GOMEMLIMIT must be the container's memory limit (resourceFieldRef limits.memory)", id)
					continue
				}
				if rolePasswordEnv.MatchString(e.Name) {
					// msgxctl roles apply's own variables (cmd/msgxctl/roles.go), not settings.
					require.Equal(t, []string{"/usr/local/bin/msgxctl", "roles", "apply"}, c.Command, "%s: %s is for msgxctl roles apply only", id, e.Name)
					require.True(t, e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil, "%s: %s must come from a Secret", id, e.Name)
					continue
				}
				def, ok := known[e.Name]
				require.True(t, ok, "%s: env %s is not a setting in docs/configuration.md", id, e.Name)
				if slices.Contains(secretSettings, e.Name) {
					require.True(t, e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil, "%s: %s must come from a Secret", id, e.Name)
				}
				if e.ValueFrom == nil {
					require.NoError(t, typeCheck(def, e.Value), "%s: env %s", id, e.Name)
				}
			}
			env := r.effectiveEnv(t, id, c, known)
			pg := env["MSGX_PG_URL"]
			require.True(t, strings.HasPrefix(pg, "secret:"), "%s: MSGX_PG_URL from the workload's own Secret", id)
			if other, dup := pgSecrets[pg]; dup {
				t.Fatalf("%s: shares its PostgreSQL Secret with %s (one role per binary)", id, other)
			}
			pgSecrets[pg] = id
			if r.overlay == "production" {
				checkProductionTLS(t, id, w, c, env)
				require.Equal(t, "production", env["MSGX_ENV"], id)
				require.NotContains(t, env, "MSGX_KAFKA_INPROCESS", "%s: a removed setting (refused at start)", id)
				require.False(t, env["MSGX_SHADOW"] == "true" && env["MSGX_COMPAT_ENTRY"] == "true", "%s: production refuses shadow mode with the compat entry on", id)
			}
			if env["MSGX_KAFKA_SASL_MECHANISM"] != "" {
				require.True(t, strings.HasPrefix(env["MSGX_KAFKA_SASL_USER"], "secret:"), "%s: a SASL mechanism needs MSGX_KAFKA_SASL_USER", id)
			}

			checkResources(t, id, c.Resources)
			checkSecurity(t, id, spec.SecurityContext, c.SecurityContext)

			if w.kind != "Deployment" {
				continue
			}
			host, port, err := net.SplitHostPort(env["MSGX_HTTP_ADDR"])
			require.NoError(t, err, "%s: MSGX_HTTP_ADDR=%q", id, env["MSGX_HTTP_ADDR"])
			require.NotContains(t, []string{"127.0.0.1", "localhost", "::1"}, host, "%s: MSGX_HTTP_ADDR listens on loopback; the kubelet and Prometheus cannot reach it", id)
			for _, pr := range []struct {
				kind, path string
				p          *corev1.Probe
			}{{"startup", "/healthz", c.StartupProbe}, {"liveness", "/healthz", c.LivenessProbe}, {"readiness", "/readyz", c.ReadinessProbe}} {
				name, p := pr.kind, pr.p
				require.NotNil(t, p, "%s: %s probe missing", id, name)
				require.NotNil(t, p.HTTPGet, "%s: %s probe is not an HTTP GET", id, name)
				require.Equal(t, pr.path, p.HTTPGet.Path, "%s: startup and liveness must be /healthz, readiness /readyz", id)
				require.Contains(t, paths, p.HTTPGet.Path, "%s: pkg/obs does not serve %s", id, p.HTTPGet.Path)
				require.Equal(t, port, strconv.Itoa(int(containerPort(t, id, c, p.HTTPGet.Port))), "%s: probe %s port ≠ MSGX_HTTP_ADDR's port", id, name)
			}
			require.Equal(t, port, w.pod.Annotations["prometheus.io/port"], "%s: scrape port ≠ MSGX_HTTP_ADDR's port", id)
			require.Equal(t, "/metrics", w.pod.Annotations["prometheus.io/path"], id)
			require.Contains(t, paths, "/metrics")

			require.True(t, c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil,
				"%s: a preStop sleep lets the Service drop the pod before SIGTERM (the image has no shell)", id)
			preStop := time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
			require.Positive(t, preStop, id)
			shutdown, err := time.ParseDuration(env["MSGX_SHUTDOWN_TIMEOUT"])
			require.NoError(t, err, id)
			drain, err := time.ParseDuration(env["MSGX_SHUTDOWN_DRAIN"])
			require.NoError(t, err, id)
			require.NotNil(t, spec.TerminationGracePeriodSeconds, id)
			grace := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
			require.Greater(t, grace, preStop+drain+shutdown, "%s: terminationGracePeriodSeconds must outlast preStop + MSGX_SHUTDOWN_DRAIN + MSGX_SHUTDOWN_TIMEOUT", id)
		}
	}
}

// checkProductionTLS: the production settings of docs/security.md on container c: Kafka over
// TLS verified against a mounted CA with SCRAM-SHA-512 (the dispatcher's mechanism), the
// mailbox's CA file mounted for tls=msgx-ca, the CA Secret msgx-tls-ca read-only in the
// container (sslrootcert of the PostgreSQL URLs), and a client-facing listener of its own.
// (MSGX_ENV=production makes the binaries refuse a Secret's URL or DSN without verified TLS.)
func checkProductionTLS(t *testing.T, id string, w workload, c corev1.Container, env map[string]string) {
	t.Helper()
	require.Equal(t, "true", env["MSGX_KAFKA_TLS"], "%s: Kafka over TLS", id)
	if w.component == "dispatcher" {
		require.Equal(t, "SCRAM-SHA-512", env["MSGX_KAFKA_SASL_MECHANISM"], "%s: SASL/SCRAM-SHA-512", id)
		require.True(t, strings.HasPrefix(env["MSGX_KAFKA_SASL_PASSWORD"], "secret:"), "%s: the SCRAM password from a Secret", id)
	}
	var caDir string
	for _, m := range c.VolumeMounts {
		for _, v := range w.pod.Spec.Volumes {
			if v.Name == m.Name && v.Secret != nil && v.Secret.SecretName == "msgx-tls-ca" {
				require.True(t, m.ReadOnly, "%s: the CA mount is read-only", id)
				caDir = m.MountPath
			}
		}
	}
	require.NotEmpty(t, caDir, "%s: the Secret msgx-tls-ca is not mounted", id)
	for k, want := range map[string]string{"MSGX_KAFKA_TLS_CA_FILE": "kafka-ca.crt", "MSGX_MYSQL_TLS_CA_FILE": "mysql-ca.crt"} {
		require.Equal(t, filepath.Join(caDir, want), env[k], "%s: %s is the mounted CA", id, k)
	}
	if port, ok := clientPorts[w.component]; ok {
		addr := env["MSGX_API_ADDR"]
		if w.component == "console" {
			addr = env["MSGX_CONSOLE_ADDR"]
		}
		_, p, err := net.SplitHostPort(addr)
		require.NoError(t, err, "%s: listen address %q", id, addr)
		require.Equal(t, strconv.Itoa(int(port)), p, "%s: clients' port", id)
		_, ops, err := net.SplitHostPort(env["MSGX_HTTP_ADDR"])
		require.NoError(t, err)
		require.NotEqual(t, ops, p, "%s: the clients' listener is not the ops port", id)
	}
}

// containerPort resolves a probe or Service port (number or name) against c's ports.
func containerPort(t *testing.T, id string, c corev1.Container, p intstr.IntOrString) int32 {
	t.Helper()
	for _, cp := range c.Ports {
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return cp.ContainerPort
		}
	}
	t.Fatalf("%s: port %s is not a container port", id, p.String())
	return 0
}

func checkResources(t *testing.T, id string, res corev1.ResourceRequirements) {
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, ok := res.Requests[name]
		require.True(t, ok, "%s: %s request", id, name)
		lim, ok := res.Limits[name]
		require.True(t, ok, "%s: %s limit", id, name)
		require.LessOrEqual(t, req.Cmp(lim), 0, "%s: %s request above limit", id, name)
		require.Positive(t, req.Sign(), "%s: %s request", id, name)
	}
}

func checkSecurity(t *testing.T, id string, pod *corev1.PodSecurityContext, c *corev1.SecurityContext) {
	require.NotNil(t, c, "%s: securityContext", id)
	if pod == nil {
		pod = &corev1.PodSecurityContext{}
	}
	nonRoot := c.RunAsNonRoot
	if nonRoot == nil {
		nonRoot = pod.RunAsNonRoot
	}
	require.True(t, nonRoot != nil && *nonRoot, "%s: runAsNonRoot", id)
	user := c.RunAsUser
	if user == nil {
		user = pod.RunAsUser
	}
	require.True(t, user != nil && *user == 65532, "%s: runAsUser 65532", id)
	require.True(t, c.ReadOnlyRootFilesystem != nil && *c.ReadOnlyRootFilesystem, "%s: readOnlyRootFilesystem", id)
	require.True(t, c.AllowPrivilegeEscalation != nil && !*c.AllowPrivilegeEscalation, "%s: allowPrivilegeEscalation false", id)
	require.True(t, c.Privileged == nil || !*c.Privileged, "%s: privileged", id)
	require.NotNil(t, c.Capabilities, "%s: capabilities", id)
	require.Equal(t, []corev1.Capability{"ALL"}, c.Capabilities.Drop, "%s: drop ALL capabilities", id)
	require.Empty(t, c.Capabilities.Add, "%s: no added capabilities", id)
	sp := c.SeccompProfile
	if sp == nil {
		sp = pod.SeccompProfile
	}
	require.True(t, sp != nil && sp.Type == corev1.SeccompProfileTypeRuntimeDefault, "%s: seccompProfile RuntimeDefault", id)
}

// selects reports whether sel matches the pod template's labels.
func selects(t *testing.T, sel *metav1.LabelSelector, pod *corev1.PodTemplateSpec) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	require.NoError(t, err)
	return !s.Empty() && s.Matches(labels.Set(pod.Labels))
}

// checkPDBs: each PDB selects exactly one Deployment's pods; each Deployment has one.
func checkPDBs(t *testing.T, r *rendered) {
	covered := map[string]int{}
	for _, p := range r.pdbs {
		id := r.overlay + ": PodDisruptionBudget " + p.Name
		require.NotNil(t, p.Spec.MaxUnavailable, id)
		require.Equal(t, intstr.FromInt32(1), *p.Spec.MaxUnavailable, id)
		var hits []string
		for _, d := range r.deployments {
			if selects(t, p.Spec.Selector, &d.Spec.Template) {
				hits = append(hits, d.Name)
			}
		}
		require.Len(t, hits, 1, "%s must select exactly one Deployment's pods, selects %v", id, hits)
		covered[hits[0]]++
	}
	for _, d := range r.deployments {
		if d.Spec.Template.Labels["app.kubernetes.io/component"] == devBroker {
			continue // one replica: nothing to keep available during a drain
		}
		require.Equal(t, 1, covered[d.Name], "%s: Deployment %s needs exactly one PodDisruptionBudget", r.overlay, d.Name)
	}
}

// checkNetworkPolicies: each policy selects exactly one workload, each workload has one, both
// directions are policed, egress opens exactly the ports in egressPorts (in production only to
// the CIDRs of overlays/production/egress.yaml), the monitoring namespace reaches only the ops
// port and clients only the port of clientPorts (none for the Job).
func checkNetworkPolicies(t *testing.T, r *rendered) {
	var cidrs map[string]string
	if r.overlay == "production" {
		cidrs = egressSettings(t)
	}
	covered := map[string]int{}
	for _, np := range r.netpols {
		id := r.overlay + ": NetworkPolicy " + np.Name
		var hit *workload
		for _, w := range r.workloads() {
			if selects(t, &np.Spec.PodSelector, w.pod) {
				require.Nil(t, hit, "%s selects more than one workload", id)
				hit = &w
			}
		}
		require.NotNil(t, hit, "%s selects no Deployment or Job", id)
		covered[hit.name]++
		require.ElementsMatch(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}, np.Spec.PolicyTypes, id)

		var got []int32
		for _, rule := range np.Spec.Egress {
			require.NotEmpty(t, rule.Ports, "%s: an egress rule without ports opens everything", id)
			for _, p := range rule.Ports {
				require.NotNil(t, p.Port, id)
				require.Equal(t, intstr.Int, p.Port.Type, id)
				if !slices.Contains(got, p.Port.IntVal) {
					got = append(got, p.Port.IntVal)
				}
			}
		}
		want, ok := egressPorts[hit.component]
		require.True(t, ok, "%s: no egress expectation for %s", id, hit.component)
		want = append(slices.Clone(want), overlayEgressPorts[r.overlay][hit.component]...)
		require.ElementsMatch(t, want, got, "%s: egress ports", id)
		if r.overlay == "production" {
			checkEgressCIDRs(t, id, np.Spec.Egress, cidrs)
		}

		if hit.kind == "Job" {
			require.Empty(t, np.Spec.Ingress, "%s: the Job serves nothing", id)
			continue
		}
		require.NotEmpty(t, np.Spec.Ingress, "%s: Prometheus must reach /metrics", id)
		c := hit.pod.Spec.Containers[0]
		opsPort := int32(8080) // MSGX_HTTP_ADDR: /healthz, /readyz, /metrics
		if hit.component == devBroker {
			opsPort = 9092 // the Kafka port
		}
		for _, rule := range np.Spec.Ingress {
			require.NotEmpty(t, rule.From, "%s: an ingress rule without sources opens the port to everyone", id)
			require.NotEmpty(t, rule.Ports, id)
			want := opsPort
			if !fromMonitoring(rule) && hit.component != devBroker {
				cp, ok := clientPorts[hit.component]
				require.True(t, ok, "%s: %s serves no client, only the monitoring namespace", id, hit.component)
				want = cp
			}
			for _, p := range rule.Ports {
				require.NotNil(t, p.Port, id)
				require.Equal(t, want, containerPort(t, id, c, *p.Port), "%s: only port %d (monitoring reaches the ops port only, clients their API or pages port only)", id, want)
			}
			if fromMonitoring(rule) {
				require.Len(t, rule.From, 1, "%s: the monitoring rule admits the monitoring namespace alone", id)
			}
		}
	}
	for _, w := range r.workloads() {
		require.Equal(t, 1, covered[w.name], "%s: %s %s needs exactly one NetworkPolicy", r.overlay, w.kind, w.name)
	}
}

// checkIngestService: the Service selects exactly the ingest pods on their HTTP port.
func checkIngestService(t *testing.T, r *rendered) {
	var ours []*corev1.Service
	for _, s := range r.services {
		if s.Spec.Selector["app.kubernetes.io/component"] != devBroker { // checkDevBroker
			ours = append(ours, s)
		}
	}
	require.Len(t, ours, 2, r.overlay+": only ingest and the console serve clients")
	slices.SortFunc(ours, func(a, b *corev1.Service) int { return strings.Compare(b.Name, a.Name) }) // msgx-ingest first
	for _, s := range ours[1:] {
		require.Equal(t, "msgx-console", s.Name)
		var hits []*appsv1.Deployment
		for _, d := range r.deployments {
			if selects(t, &metav1.LabelSelector{MatchLabels: s.Spec.Selector}, &d.Spec.Template) {
				hits = append(hits, d)
			}
		}
		require.Len(t, hits, 1, "%s: Service msgx-console selects %d Deployments", r.overlay, len(hits))
		require.Equal(t, "msgx-console", hits[0].Name)
		require.Len(t, s.Spec.Ports, 1)
		require.Equal(t, clientPorts["console"], containerPort(t, "Service msgx-console", hits[0].Spec.Template.Spec.Containers[0], s.Spec.Ports[0].TargetPort),
			"%s: the Service exposes the console's pages, not its ops port", r.overlay)
	}
	s := ours[0]
	require.Equal(t, "msgx-ingest", s.Name)
	var hits []*appsv1.Deployment
	for _, d := range r.deployments {
		if selects(t, &metav1.LabelSelector{MatchLabels: s.Spec.Selector}, &d.Spec.Template) {
			hits = append(hits, d)
		}
	}
	require.Len(t, hits, 1, "%s: Service msgx-ingest selects %d Deployments", r.overlay, len(hits))
	require.Equal(t, "msgx-ingest", hits[0].Name)
	require.Len(t, s.Spec.Ports, 1, "%s: the Service exposes the API port only, not the ops port", r.overlay)
	require.Equal(t, clientPorts["ingest"], containerPort(t, "Service msgx-ingest", hits[0].Spec.Template.Spec.Containers[0], s.Spec.Ports[0].TargetPort))
}

// optionalSecrets are the Secrets production may reference without dev defining them: each
// turns on an optional feature, and every reference to it is marked optional.
var optionalSecrets = map[string]bool{"msgx-console-oidc": true}

// checkSecrets: in dev every referenced Secret and key exists (generated); production generates
// none (they come from the cluster's secret store) and references only Secrets dev defines too,
// or one of optionalSecrets by an optional reference, so the dev overlay is the complete list an
// operator must provide and optionalSecrets what an operator may.
func checkSecrets(t *testing.T, r, dev *rendered) {
	devNames := map[string]bool{}
	for _, orig := range dev.secretOrig {
		devNames[orig] = true
	}
	if r.overlay == "production" {
		require.Empty(t, r.secrets, "production must not carry credentials")
	}
	for _, w := range r.workloads() {
		for _, c := range w.pod.Spec.Containers {
			for _, e := range c.Env {
				if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
					continue
				}
				ref := e.ValueFrom.SecretKeyRef
				id := fmt.Sprintf("%s: %s %s env %s: Secret %s", r.overlay, w.kind, w.name, e.Name, ref.Name)
				if r.overlay == "production" {
					optional := optionalSecrets[ref.Name] && ref.Optional != nil && *ref.Optional
					require.True(t, devNames[ref.Name] || optional, "%s is not defined in the dev overlay (nor an optional reference to one of %v)", id, optionalSecrets)
					continue
				}
				sec, ok := r.secrets[ref.Name]
				require.True(t, ok, "%s missing", id)
				_, inData := sec.Data[ref.Key]
				_, inString := sec.StringData[ref.Key]
				require.True(t, inData || inString, "%s has no key %s", id, ref.Key)
			}
		}
	}
}

// checkDevBroker: in dev, one Service selects exactly the broker's pods on its Kafka port; the
// broker advertises that Service's address, which is what the dispatcher's MSGX_KAFKA_BROKERS
// names; the dispatcher pods may reach it; its data directory is a mounted volume (the root
// filesystem is read-only).
func checkDevBroker(t *testing.T, r *rendered) {
	var broker, dispatcher *appsv1.Deployment
	for _, d := range r.deployments {
		switch d.Spec.Template.Labels["app.kubernetes.io/component"] {
		case devBroker:
			broker = d
		case "dispatcher":
			dispatcher = d
		}
	}
	if r.overlay != "dev" {
		require.Nil(t, broker, r.overlay)
		return
	}
	require.NotNil(t, broker, "dev: the development broker")
	require.NotNil(t, dispatcher)
	c := broker.Spec.Template.Spec.Containers[0]
	flags := map[string]string{}
	for i := 0; i+1 < len(c.Args); i += 2 {
		flags[c.Args[i]] = c.Args[i+1]
	}
	host, port, err := net.SplitHostPort(flags["-listen"])
	require.NoError(t, err, "dev: devbroker -listen")
	require.Equal(t, "0.0.0.0", host, "dev: the broker must listen beyond loopback")

	var svc *corev1.Service
	for _, s := range r.services {
		if selects(t, &metav1.LabelSelector{MatchLabels: s.Spec.Selector}, &broker.Spec.Template) {
			require.Nil(t, svc, "dev: one Service for the broker")
			svc = s
			require.False(t, selects(t, &metav1.LabelSelector{MatchLabels: s.Spec.Selector}, &dispatcher.Spec.Template))
		}
	}
	require.NotNil(t, svc, "dev: no Service selects the broker")
	require.Len(t, svc.Spec.Ports, 1)
	require.Equal(t, port, strconv.Itoa(int(containerPort(t, "dev: Service "+svc.Name, c, svc.Spec.Ports[0].TargetPort))))
	addr := net.JoinHostPort(svc.Name, strconv.Itoa(int(svc.Spec.Ports[0].Port)))
	require.Equal(t, addr, flags["-advertise"], "dev: the broker must advertise its Service's address")

	env := r.effectiveEnv(t, "dev: dispatcher", dispatcher.Spec.Template.Spec.Containers[0], settings(t))
	require.Equal(t, addr, env["MSGX_KAFKA_BROKERS"], "dev: the dispatcher must use the broker's Service")

	mounted := false
	for _, m := range c.VolumeMounts {
		mounted = mounted || m.MountPath == flags["-data-dir"]
	}
	require.True(t, mounted, "dev: -data-dir %q is not a mounted volume", flags["-data-dir"])

	reached := false
	for _, np := range r.netpols {
		if !selects(t, &np.Spec.PodSelector, &broker.Spec.Template) {
			continue
		}
		for _, rule := range np.Spec.Ingress {
			for _, from := range rule.From {
				if from.PodSelector != nil && from.NamespaceSelector == nil && selects(t, from.PodSelector, &dispatcher.Spec.Template) {
					reached = true
				}
			}
		}
	}
	require.True(t, reached, "dev: the dispatcher pods must be allowed to reach the broker")
}

// fromMonitoring reports whether an ingress rule admits the monitoring namespace: such a rule
// may open only the ops port (/metrics), never ingest's API.
func fromMonitoring(rule networkingv1.NetworkPolicyIngressRule) bool {
	for _, f := range rule.From {
		if f.NamespaceSelector != nil && f.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] == "monitoring" {
			return true
		}
	}
	return false
}
