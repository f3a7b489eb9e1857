// Package helmcheck tests the Helm chart in deploy/helm/steward: it renders
// the chart with Helm's own library, as `helm install` would, decodes every
// manifest strictly into its Kubernetes type, and checks what the pods get.
package helmcheck

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

const (
	chartDir = "../../deploy/helm/steward"
	// imagePluginsHCL is the plugins.hcl the image carries, which the
	// chart's default must equal.
	imagePluginsHCL = "../../deploy/image/etc/steward/plugins.hcl"
	// hostDrainSeconds is the longest a host drains after SIGTERM by
	// default: STEWARD_DRAIN_DELAY (5s) then STEWARD_SHUTDOWN_GRACE (30s).
	// The pod's grace period must exceed it, or the kubelet kills the host
	// before its requests have finished and its plugins stopped.
	hostDrainSeconds = 5 + 30
	// appUID is the image's user.
	appUID = 65532
)

// release is one rendering of the chart: its objects, each of a kind the
// chart may produce at most once, decoded strictly.
type release struct {
	deployment     *appsv1.Deployment
	service        *corev1.Service
	configMap      *corev1.ConfigMap
	pdb            *policyv1.PodDisruptionBudget
	serviceAccount *corev1.ServiceAccount
	// files are the templates' outputs by name, as Helm renders them.
	files map[string]string
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	return c
}

// render renders the chart for release "steward" with values over its
// defaults, as `helm install steward deploy/helm/steward -f values` would,
// with Helm's strict engine: a template naming a value that does not
// exist fails.
func render(c *chart.Chart, values map[string]any) (map[string]string, error) {
	opts := chartutil.ReleaseOptions{Name: "steward", Namespace: "governance", Revision: 1, IsInstall: true}
	vals, err := chartutil.ToRenderValues(c, values, opts, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	return engine.Engine{Strict: true}.Render(c, vals)
}

func mustRender(t *testing.T, values map[string]any) release {
	t.Helper()
	files, err := render(loadChart(t), values)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	r := release{files: files}
	for name, content := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			continue
		}
		for _, doc := range releaseutil.SplitManifests(content) {
			r.decode(t, name, doc)
		}
	}
	return r
}

// decode reads one manifest into the object of its kind, refusing a field
// the Kubernetes type does not have and a kind the chart should not make.
func (r *release) decode(t *testing.T, file, doc string) {
	t.Helper()
	var meta metav1.TypeMeta
	if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var obj any
	switch meta.APIVersion + " " + meta.Kind {
	case "apps/v1 Deployment":
		obj = set(t, file, &r.deployment)
	case "v1 Service":
		obj = set(t, file, &r.service)
	case "v1 ConfigMap":
		obj = set(t, file, &r.configMap)
	case "policy/v1 PodDisruptionBudget":
		obj = set(t, file, &r.pdb)
	case "v1 ServiceAccount":
		obj = set(t, file, &r.serviceAccount)
	default:
		t.Fatalf("%s: unexpected object %s %s", file, meta.APIVersion, meta.Kind)
	}
	if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
		t.Fatalf("%s: %s: %v", file, meta.Kind, err)
	}
}

// set points *slot at a new object and returns it, failing when the kind
// was already rendered.
func set[T any](t *testing.T, file string, slot **T) *T {
	t.Helper()
	if *slot != nil {
		t.Fatalf("%s: a second %T", file, *slot)
	}
	*slot = new(T)
	return *slot
}

func (r release) container(t *testing.T) corev1.Container {
	t.Helper()
	if r.deployment == nil {
		t.Fatal("no Deployment rendered")
	}
	cs := r.deployment.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("%d containers, want 1", len(cs))
	}
	return cs[0]
}

// deref is *p, or the zero value when p is nil (a field left unset).
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func env(c corev1.Container, name string) (corev1.EnvVar, bool) {
	i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
	if i < 0 {
		return corev1.EnvVar{}, false
	}
	return c.Env[i], true
}

func mount(c corev1.Container, path string) (corev1.VolumeMount, bool) {
	i := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == path })
	if i < 0 {
		return corev1.VolumeMount{}, false
	}
	return c.VolumeMounts[i], true
}

func volume(d *appsv1.Deployment, name string) (corev1.Volume, bool) {
	vs := d.Spec.Template.Spec.Volumes
	i := slices.IndexFunc(vs, func(v corev1.Volume) bool { return v.Name == name })
	if i < 0 {
		return corev1.Volume{}, false
	}
	return vs[i], true
}

// checkSecretRef checks that variable name comes from key of Secret secret.
func checkSecretRef(t *testing.T, c corev1.Container, name, secret, key string) {
	t.Helper()
	e, ok := env(c, name)
	if !ok {
		t.Errorf("%s not set", name)
		return
	}
	if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
		t.Errorf("%s = %+v, want it from a Secret", name, e)
		return
	}
	ref := e.ValueFrom.SecretKeyRef
	if ref.Name != secret || ref.Key != key {
		t.Errorf("%s from Secret %q key %q, want %q key %q", name, ref.Name, ref.Key, secret, key)
	}
}

func checkValue(t *testing.T, c corev1.Container, name, want string) {
	t.Helper()
	if e, ok := env(c, name); !ok || e.Value != want || e.ValueFrom != nil {
		t.Errorf("%s = %+v, want %q", name, e, want)
	}
}

func checkProbe(t *testing.T, what string, p *corev1.Probe, path string) {
	t.Helper()
	if p == nil || p.HTTPGet == nil {
		t.Errorf("%s probe = %+v, want GET %s", what, p, path)
		return
	}
	if p.HTTPGet.Path != path || p.HTTPGet.Port.String() != "http" {
		t.Errorf("%s probe GET %s on port %s, want %s on http", what, p.HTTPGet.Path, p.HTTPGet.Port.String(), path)
	}
}

func TestDefaults(t *testing.T) {
	r := mustRender(t, nil)
	d := r.deployment
	c := r.container(t)
	pod := d.Spec.Template.Spec

	if d.Name != "steward" || deref(d.Spec.Replicas) != 2 {
		t.Errorf("Deployment %s with %d replicas, want steward with 2", d.Name, deref(d.Spec.Replicas))
	}
	if c.Image != "localhost/steward:dev" || !slices.Equal(c.Args, []string{"serve"}) {
		t.Errorf("container runs %s %v, want localhost/steward:dev serve", c.Image, c.Args)
	}
	if s := d.Spec.Strategy; s.Type != appsv1.RollingUpdateDeploymentStrategyType || s.RollingUpdate == nil ||
		s.RollingUpdate.MaxUnavailable == nil || s.RollingUpdate.MaxUnavailable.IntValue() != 0 {
		t.Errorf("strategy %+v, want a rolling update with maxUnavailable 0", s)
	}
	if g := deref(pod.TerminationGracePeriodSeconds); g <= hostDrainSeconds {
		t.Errorf("terminationGracePeriodSeconds %d, want more than the host's %d s drain", g, hostDrainSeconds)
	}

	t.Run("security", func(t *testing.T) {
		psc := pod.SecurityContext
		if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != appUID ||
			psc.FSGroup == nil || *psc.FSGroup != appUID ||
			psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("pod securityContext %+v, want non-root %d, fsGroup %d, seccomp RuntimeDefault", psc, appUID, appUID)
		}
		sc := c.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
			t.Errorf("container securityContext %+v, want a read-only root, no privilege escalation, every capability dropped", sc)
		}
		if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
			t.Error("the pod mounts a service account token")
		}
		if pod.EnableServiceLinks == nil || *pod.EnableServiceLinks {
			t.Error("service links are enabled: STEWARD_PORT and the like would reach the host")
		}
		sa := r.serviceAccount
		if sa == nil || sa.Name != pod.ServiceAccountName || sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
			t.Errorf("ServiceAccount %+v for pod account %q, want it named so, without a token", sa, pod.ServiceAccountName)
		}
	})

	t.Run("probes", func(t *testing.T) {
		if len(c.Ports) != 1 || c.Ports[0].Name != "http" || c.Ports[0].ContainerPort != 8000 {
			t.Errorf("ports %+v, want http on 8000", c.Ports)
		}
		checkValue(t, c, "STEWARD_HTTP_ADDR", ":8000")
		checkProbe(t, "liveness", c.LivenessProbe, "/health")
		checkProbe(t, "readiness", c.ReadinessProbe, "/api/v1/health/ready")
		checkProbe(t, "startup", c.StartupProbe, "/health")
	})

	t.Run("environment", func(t *testing.T) {
		checkValue(t, c, "STEWARD_ENV", "production")
		checkValue(t, c, "STEWARD_DATA_DIR", "/data")
		checkValue(t, c, "STEWARD_PLUGINS_FILE", "/etc/steward/plugins.hcl")
		checkSecretRef(t, c, "STEWARD_DATABASE_URL", "steward", "database-url")
		checkSecretRef(t, c, "STEWARD_REDIS_URL", "steward", "redis-url")
		checkSecretRef(t, c, "STEWARD_JWT_SECRET", "steward", "jwt-secret")
	})

	t.Run("volumes", func(t *testing.T) {
		for _, path := range []string{"/data", "/tmp"} {
			m, ok := mount(c, path)
			if !ok || m.ReadOnly {
				t.Errorf("%s: mount %+v, want a writable volume", path, m)
				continue
			}
			if v, _ := volume(d, m.Name); v.EmptyDir == nil {
				t.Errorf("%s: volume %+v, want an emptyDir", path, v)
			}
		}
		m, ok := mount(c, "/etc/steward/plugins.hcl")
		if !ok || m.SubPath != "plugins.hcl" || !m.ReadOnly {
			t.Fatalf("plugins.hcl mount %+v, want the ConfigMap's plugins.hcl, read-only", m)
		}
		v, _ := volume(d, m.Name)
		if v.ConfigMap == nil || r.configMap == nil || v.ConfigMap.Name != r.configMap.Name {
			t.Errorf("plugins.hcl from volume %+v, want the ConfigMap %v", v, r.configMap)
		}
	})

	t.Run("plugins.hcl", func(t *testing.T) {
		want, err := os.ReadFile(imagePluginsHCL)
		if err != nil {
			t.Fatal(err)
		}
		// Helm trims each manifest it applies, and with it the final line
		// break of a block that ends the document.
		if got := r.configMap.Data["plugins.hcl"]; got != strings.TrimSuffix(string(want), "\n") {
			t.Errorf("the ConfigMap's plugins.hcl differs from the image's %s:\n%s", imagePluginsHCL, got)
		}
		sum := fmt.Sprintf("%x", sha256.Sum256([]byte(r.files["steward/templates/configmap.yaml"])))
		if got := d.Spec.Template.Annotations["checksum/config"]; got != sum {
			t.Errorf("checksum/config = %q, want the ConfigMap's %q", got, sum)
		}
	})

	t.Run("selectors", func(t *testing.T) {
		sel := d.Spec.Selector.MatchLabels
		if len(sel) == 0 {
			t.Fatal("the Deployment selects no labels")
		}
		for k, v := range sel {
			if d.Spec.Template.Labels[k] != v {
				t.Errorf("pods lack the selector's %s=%s", k, v)
			}
		}
		s := r.service
		if s == nil || !maps.Equal(s.Spec.Selector, sel) {
			t.Errorf("Service %+v does not select the Deployment's pods %v", s, sel)
		} else if len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Port != 80 || s.Spec.Ports[0].TargetPort.String() != "http" {
			t.Errorf("Service ports %+v, want 80 to http", s.Spec.Ports)
		}
		p := r.pdb
		if p == nil || p.Spec.MinAvailable == nil || p.Spec.MinAvailable.IntValue() != 1 || p.Spec.Selector == nil ||
			!maps.Equal(p.Spec.Selector.MatchLabels, sel) {
			t.Errorf("PodDisruptionBudget %+v, want minAvailable 1 of the Deployment's pods", p)
		}
	})

	if notes := r.files["steward/templates/NOTES.txt"]; !strings.Contains(notes, "port-forward service/steward 8000:80") {
		t.Errorf("NOTES.txt does not say how to reach the Service:\n%s", notes)
	}
}

func TestOneReplicaHasNoDisruptionBudget(t *testing.T) {
	r := mustRender(t, map[string]any{"replicaCount": 1})
	if n := deref(r.deployment.Spec.Replicas); n != 1 {
		t.Errorf("%d replicas, want 1", n)
	}
	if r.pdb != nil {
		t.Errorf("PodDisruptionBudget %+v with one replica: no node could be drained", r.pdb.Spec)
	}
}

func TestDisruptionBudgetBelowReplicas(t *testing.T) {
	_, err := render(loadChart(t), map[string]any{"replicaCount": 2, "podDisruptionBudget": map[string]any{"minAvailable": 2}})
	if err == nil || !strings.Contains(err.Error(), "podDisruptionBudget.minAvailable (2) must be below replicaCount (2)") {
		t.Errorf("minAvailable 2 of 2 replicas: err = %v, want it refused", err)
	}
	r := mustRender(t, map[string]any{"replicaCount": 3, "podDisruptionBudget": map[string]any{"minAvailable": 2}})
	if r.pdb == nil || r.pdb.Spec.MinAvailable.IntValue() != 2 {
		t.Errorf("PodDisruptionBudget %v, want minAvailable 2", r.pdb)
	}
	r = mustRender(t, map[string]any{"podDisruptionBudget": map[string]any{"enabled": false}})
	if r.pdb != nil {
		t.Error("PodDisruptionBudget rendered while disabled")
	}
}

func TestCustomValues(t *testing.T) {
	const hcl = "plugin \"cost\" {\n  binary = \"/plugins/cost\"\n}\n"
	def := mustRender(t, nil)
	r := mustRender(t, map[string]any{
		"fullnameOverride": "governance",
		"image":            map[string]any{"repository": "registry.example.com/steward", "tag": "v1.2.3"},
		"environment":      "staging",
		"existingSecret":   map[string]any{"name": "steward-prod", "databaseUrlKey": "pg", "redisUrlKey": ""},
		"extraEnv": []any{
			map[string]any{"name": "STEWARD_AZURE_TENANT_ID", "value": "tenant"},
			map[string]any{"name": "STEWARD_AZURE_CLIENT_SECRET", "valueFrom": map[string]any{
				"secretKeyRef": map[string]any{"name": "azure", "key": "client-secret"}}},
		},
		"pluginsHcl":     hcl,
		"persistence":    map[string]any{"existingClaim": "steward-data"},
		"serviceAccount": map[string]any{"create": false, "name": "workload"},
		"service":        map[string]any{"type": "NodePort", "port": 8080},
		"podAnnotations": map[string]any{"team": "platform"},
	})
	c := r.container(t)
	pod := r.deployment.Spec.Template.Spec

	if r.deployment.Name != "governance" || r.configMap.Name != "governance" || r.service.Name != "governance" {
		t.Errorf("names %s, %s, %s, want governance", r.deployment.Name, r.configMap.Name, r.service.Name)
	}
	if c.Image != "registry.example.com/steward:v1.2.3" {
		t.Errorf("image %s", c.Image)
	}
	checkValue(t, c, "STEWARD_ENV", "staging")
	checkSecretRef(t, c, "STEWARD_DATABASE_URL", "steward-prod", "pg")
	checkSecretRef(t, c, "STEWARD_JWT_SECRET", "steward-prod", "jwt-secret")
	if e, ok := env(c, "STEWARD_REDIS_URL"); ok {
		t.Errorf("STEWARD_REDIS_URL = %+v with an empty key, want it unset", e)
	}
	checkValue(t, c, "STEWARD_AZURE_TENANT_ID", "tenant")
	checkSecretRef(t, c, "STEWARD_AZURE_CLIENT_SECRET", "azure", "client-secret")

	if got := r.configMap.Data["plugins.hcl"]; got != strings.TrimSuffix(hcl, "\n") {
		t.Errorf("plugins.hcl = %q, want %q", got, hcl)
	}
	ann := r.deployment.Spec.Template.Annotations
	if ann["checksum/config"] == def.deployment.Spec.Template.Annotations["checksum/config"] {
		t.Error("another plugins.hcl leaves the checksum annotation as it was: the pods would not roll")
	}
	if ann["team"] != "platform" {
		t.Errorf("pod annotations %v lack team=platform", ann)
	}
	m, _ := mount(c, "/data")
	if v, _ := volume(r.deployment, m.Name); v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "steward-data" {
		t.Errorf("/data on %+v, want the claim steward-data", v)
	}
	if r.serviceAccount != nil || pod.ServiceAccountName != "workload" {
		t.Errorf("ServiceAccount %v, pod account %q, want none made and workload used", r.serviceAccount, pod.ServiceAccountName)
	}
	if r.service.Spec.Type != corev1.ServiceTypeNodePort || r.service.Spec.Ports[0].Port != 8080 {
		t.Errorf("Service %s on %d, want NodePort on 8080", r.service.Spec.Type, r.service.Spec.Ports[0].Port)
	}
}

func TestSchemaRefusesBadValues(t *testing.T) {
	c := loadChart(t)
	for name, tc := range map[string]struct {
		values map[string]any
		want   string
	}{
		"replicas as a word":   {map[string]any{"replicaCount": "two"}, "replicaCount"},
		"no replica":           {map[string]any{"replicaCount": 0}, "replicaCount"},
		"unknown environment":  {map[string]any{"environment": "prod"}, "environment"},
		"misspelt key":         {map[string]any{"replicas": 3}, "replicas"},
		"port out of range":    {map[string]any{"service": map[string]any{"port": 70000}}, "port"},
		"unknown service type": {map[string]any{"service": map[string]any{"type": "Ingress"}}, "type"},
		"no secret name":       {map[string]any{"existingSecret": map[string]any{"name": ""}}, "name"},
		"empty plugins.hcl":    {map[string]any{"pluginsHcl": ""}, "pluginsHcl"},
		"relative probe path":  {map[string]any{"readinessProbe": map[string]any{"httpGet": map[string]any{"path": "ready", "port": "http"}}}, "path"},
		"pull policy":          {map[string]any{"image": map[string]any{"pullPolicy": "Sometimes"}}, "pullPolicy"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := render(c, tc.values)
			if err == nil {
				t.Fatalf("%v rendered, want the schema to refuse it", tc.values)
			}
			if !strings.Contains(err.Error(), "values don't meet the specifications of the schema") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want the schema's, naming %s", err, tc.want)
			}
		})
	}
}
