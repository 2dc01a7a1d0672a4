// Package rehearse runs the production overlay's configuration for real on one machine (make
// rehearse, docs/deploy.md "Rehearsal"): it renders deploy/k8s/overlays/production in process,
// takes every Deployment's and Job's containers (command, environment with the ConfigMap and
// Secret references resolved, mounted Secrets), and the rehearsal test runs docs/deploy.md's
// steps and every binary as a local process with exactly that environment, against real
// servers set up as production expects them. What must change to run on one machine (host names
// and ports, mount paths) is one visible Mapping; everything else comes from the manifests.
package rehearse

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// Release is what an overlay deploys, as the kubelet would start it.
type Release struct {
	ConfigMaps map[string]map[string]string
	// Containers in the order a rollout starts them: the migration Job's init container, its
	// container, then each Deployment's containers (by name).
	Containers []Container
}

// Container is one container of a Deployment or Job.
type Container struct {
	Workload string // the Deployment's or Job's name
	Kind     string // Deployment or Job
	Name     string // the container's name
	Init     bool   // an init container (runs to completion before the others)
	Replicas int    // the Deployment's replicas (1 for a Job)
	Command  []string
	// Env are the variables in the kubelet's order: every envFrom ConfigMap, then env (a later
	// variable of the same name wins).
	Env    []Var
	Mounts []Mount
	// MemoryLimit is limits.memory in bytes (0: none): what resourceFieldRef limits.memory gives.
	MemoryLimit int64
}

// Var is one environment variable: a value, or a reference to resolve.
type Var struct {
	Name, Value string
	// FromConfigMap or FromSecret name the object of a reference, Key its key.
	FromConfigMap, FromSecret, Key string
	Optional                       bool
	// Resource is a resourceFieldRef (e.g. limits.memory), Divisor its divisor ("": 1).
	Resource, Divisor string
}

// Mount is a Secret mounted as files: each key at Path/Items[key].
type Mount struct {
	Path   string
	Secret string
	Items  map[string]string
}

// Render builds the overlay in dir (kustomize, in process) and returns its release.
func Render(dir string) (*Release, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	rel := &Release{ConfigMaps: map[string]map[string]string{}}
	var deploys []appsv1.Deployment
	var jobs []batchv1.Job
	for _, res := range m.Resources() {
		y, err := res.AsYAML()
		if err != nil {
			return nil, err
		}
		switch res.GetKind() {
		case "ConfigMap":
			var cm corev1.ConfigMap
			if err := yaml.Unmarshal(y, &cm); err != nil {
				return nil, fmt.Errorf("ConfigMap %s: %w", res.GetName(), err)
			}
			rel.ConfigMaps[cm.Name] = cm.Data
		case "Deployment":
			var d appsv1.Deployment
			if err := yaml.Unmarshal(y, &d); err != nil {
				return nil, fmt.Errorf("Deployment %s: %w", res.GetName(), err)
			}
			deploys = append(deploys, d)
		case "Job":
			var j batchv1.Job
			if err := yaml.Unmarshal(y, &j); err != nil {
				return nil, fmt.Errorf("Job %s: %w", res.GetName(), err)
			}
			jobs = append(jobs, j)
		}
	}
	for _, j := range jobs {
		rel.Containers = append(rel.Containers, containers("Job", j.Name, 1, j.Spec.Template.Spec)...)
	}
	sort.Slice(deploys, func(a, b int) bool { return deploys[a].Name < deploys[b].Name })
	for _, d := range deploys {
		replicas := 1
		if d.Spec.Replicas != nil {
			replicas = int(*d.Spec.Replicas)
		}
		rel.Containers = append(rel.Containers, containers("Deployment", d.Name, replicas, d.Spec.Template.Spec)...)
	}
	return rel, nil
}

// containers lists a pod template's init containers, then its containers.
func containers(kind, workload string, replicas int, pod corev1.PodSpec) []Container {
	secrets := map[string]corev1.SecretVolumeSource{}
	for _, v := range pod.Volumes {
		if v.Secret != nil {
			secrets[v.Name] = *v.Secret
		}
	}
	var out []Container
	add := func(c corev1.Container, init bool) {
		out = append(out, Container{
			Workload: workload, Kind: kind, Name: c.Name, Init: init, Replicas: replicas,
			Command: append(slices.Clone(c.Command), c.Args...), Env: env(c),
			Mounts: mounts(c, secrets), MemoryLimit: c.Resources.Limits.Memory().Value(),
		})
	}
	for _, c := range pod.InitContainers {
		add(c, true)
	}
	for _, c := range pod.Containers {
		add(c, false)
	}
	return out
}

func env(c corev1.Container) []Var {
	var vars []Var
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef != nil {
			vars = append(vars, Var{FromConfigMap: from.ConfigMapRef.Name, Optional: from.ConfigMapRef.Optional != nil && *from.ConfigMapRef.Optional})
		}
		if from.SecretRef != nil {
			vars = append(vars, Var{FromSecret: from.SecretRef.Name, Optional: from.SecretRef.Optional != nil && *from.SecretRef.Optional})
		}
	}
	for _, e := range c.Env {
		v := Var{Name: e.Name, Value: e.Value}
		if s := e.ValueFrom; s != nil {
			switch {
			case s.SecretKeyRef != nil:
				v.FromSecret, v.Key, v.Optional = s.SecretKeyRef.Name, s.SecretKeyRef.Key, s.SecretKeyRef.Optional != nil && *s.SecretKeyRef.Optional
			case s.ConfigMapKeyRef != nil:
				v.FromConfigMap, v.Key, v.Optional = s.ConfigMapKeyRef.Name, s.ConfigMapKeyRef.Key, s.ConfigMapKeyRef.Optional != nil && *s.ConfigMapKeyRef.Optional
			case s.ResourceFieldRef != nil:
				v.Resource = s.ResourceFieldRef.Resource
				if d := s.ResourceFieldRef.Divisor; !d.IsZero() {
					v.Divisor = d.String()
				}
			}
		}
		vars = append(vars, v)
	}
	return vars
}

func mounts(c corev1.Container, secrets map[string]corev1.SecretVolumeSource) []Mount {
	var out []Mount
	for _, vm := range c.VolumeMounts {
		s, ok := secrets[vm.Name]
		if !ok {
			continue
		}
		m := Mount{Path: vm.MountPath, Secret: s.SecretName, Items: map[string]string{}}
		for _, it := range s.Items {
			m.Items[it.Key] = it.Path
		}
		out = append(out, m)
	}
	return out
}

// Secrets are the Secrets the platform team creates: name → key → value.
type Secrets map[string]map[string]string

// Environ resolves the container's environment as the kubelet does: ConfigMap and Secret
// references (a missing object or key that is not optional is an error naming it: the pod
// would not start), limits.memory in bytes. It returns NAME=value lines, sorted. What the
// manifests do not use is refused rather than resolved differently from the kubelet: $(VAR)
// expansion, a divisor, a resource without its limit.
func (r *Release) Environ(c Container, secrets Secrets) ([]string, error) {
	for _, a := range c.Command {
		if strings.Contains(a, "$(") {
			return nil, fmt.Errorf("%s/%s: $(VAR) expansion in the command is not rehearsed", c.Workload, c.Name)
		}
	}
	out := map[string]string{}
	for _, v := range c.Env {
		switch {
		case v.Name == "" && v.FromConfigMap != "":
			data, ok := r.ConfigMaps[v.FromConfigMap]
			if !ok && !v.Optional {
				return nil, fmt.Errorf("%s/%s: envFrom ConfigMap %s does not exist", c.Workload, c.Name, v.FromConfigMap)
			}
			maps.Copy(out, data)
		case v.Name == "" && v.FromSecret != "":
			data, ok := secrets[v.FromSecret]
			if !ok && !v.Optional {
				return nil, fmt.Errorf("%s/%s: envFrom Secret %s does not exist", c.Workload, c.Name, v.FromSecret)
			}
			maps.Copy(out, data)
		case v.FromConfigMap != "":
			val, ok := r.ConfigMaps[v.FromConfigMap][v.Key]
			if !ok && !v.Optional {
				return nil, fmt.Errorf("%s/%s: %s: ConfigMap %s has no key %s", c.Workload, c.Name, v.Name, v.FromConfigMap, v.Key)
			}
			if ok {
				out[v.Name] = val
			}
		case v.FromSecret != "":
			val, ok := secrets[v.FromSecret][v.Key]
			if !ok && !v.Optional {
				return nil, fmt.Errorf("%s/%s: %s: Secret %s has no key %s", c.Workload, c.Name, v.Name, v.FromSecret, v.Key)
			}
			if ok {
				out[v.Name] = val
			}
		case v.Resource == "limits.memory" && v.Divisor == "" && c.MemoryLimit > 0:
			out[v.Name] = fmt.Sprint(c.MemoryLimit)
		case v.Resource != "":
			return nil, fmt.Errorf("%s/%s: %s: resourceFieldRef %s (divisor %q, limit %d) is not rehearsed", c.Workload, c.Name, v.Name, v.Resource, v.Divisor, c.MemoryLimit)
		case strings.Contains(v.Value, "$("):
			return nil, fmt.Errorf("%s/%s: %s: $(VAR) expansion is not rehearsed", c.Workload, c.Name, v.Name)
		default:
			out[v.Name] = v.Value
		}
	}
	lines := make([]string, 0, len(out))
	for _, k := range slices.Sorted(maps.Keys(out)) {
		lines = append(lines, k+"="+out[k])
	}
	return lines, nil
}

// Files are the container's mounted Secret files: path → content. A missing Secret or key is
// an error naming it (the pod would not start).
func (c Container) Files(secrets Secrets) (map[string]string, error) {
	out := map[string]string{}
	for _, m := range c.Mounts {
		data, ok := secrets[m.Secret]
		if !ok {
			return nil, fmt.Errorf("%s/%s: mounted Secret %s does not exist", c.Workload, c.Name, m.Secret)
		}
		items := m.Items
		if len(items) == 0 { // no items: every key, as a file of its name
			items = map[string]string{}
			for key := range data {
				items[key] = key
			}
		}
		for key, path := range items {
			val, ok := data[key]
			if !ok {
				return nil, fmt.Errorf("%s/%s: mounted Secret %s has no key %s", c.Workload, c.Name, m.Secret, key)
			}
			out[m.Path+"/"+path] = val
		}
	}
	return out, nil
}
