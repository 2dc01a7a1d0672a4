package rehearse_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/deploy/k8s/rehearse"
)

// Environ resolves what the kubelet resolves and refuses what it would resolve otherwise.
func TestEnviron(t *testing.T) {
	t.Parallel()
	rel := &rehearse.Release{ConfigMaps: map[string]map[string]string{"cm": {"A": "1", "B": "2"}}}
	secrets := rehearse.Secrets{"s": {"k": "secret"}}
	c := rehearse.Container{Workload: "w", Name: "c", MemoryLimit: 256 << 20, Env: []rehearse.Var{
		{FromConfigMap: "cm"},
		{Name: "B", Value: "3"}, // env wins over envFrom
		{Name: "S", FromSecret: "s", Key: "k"},
		{Name: "O", FromSecret: "s", Key: "none", Optional: true},
		{Name: "GOMEMLIMIT", Resource: "limits.memory"},
	}}
	env, err := rel.Environ(c, secrets)
	require.NoError(t, err)
	require.Equal(t, []string{"A=1", "B=3", "GOMEMLIMIT=268435456", "S=secret"}, env)

	for name, bad := range map[string]rehearse.Var{
		"missing key":    {Name: "X", FromSecret: "s", Key: "none"},
		"missing secret": {Name: "X", FromSecret: "nope", Key: "k"},
		"expansion":      {Name: "X", Value: "$(A)/x"},
		"divisor":        {Name: "X", Resource: "limits.memory", Divisor: "1Mi"},
		"other resource": {Name: "X", Resource: "limits.cpu"},
	} {
		_, err := rel.Environ(rehearse.Container{Workload: "w", Name: "c", MemoryLimit: 1, Env: []rehearse.Var{bad}}, secrets)
		require.Error(t, err, name)
	}
	_, err = rel.Environ(rehearse.Container{Workload: "w", Name: "c", Env: []rehearse.Var{{Name: "X", Resource: "limits.memory"}}}, secrets)
	require.Error(t, err, "no limit: the kubelet would give the node's allocatable memory")
}

func TestMapping(t *testing.T) {
	t.Parallel()
	m := rehearse.Mapping{"/etc/msgx/tls": "/tmp/x/etc/msgx/tls", "/etc/msgx": "/nope", "kafka-0:9093": "127.0.0.1:1"}
	require.Equal(t, []string{"U=postgres://h/db?sslrootcert=/tmp/x/etc/msgx/tls/pg-ca.crt", "B=127.0.0.1:1,other:9093"},
		m.Apply([]string{"U=postgres://h/db?sslrootcert=/etc/msgx/tls/pg-ca.crt", "B=kafka-0:9093,other:9093"}))
	require.Equal(t, "/tmp/x/etc/msgx/tls/ca", m.Path("/etc/msgx/tls/ca"))
}
