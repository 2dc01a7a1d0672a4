package config

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/settings"
)

// TestProductionOverlayIsAccepted: the production Kubernetes overlay's settings (its ConfigMap
// literals) with the Secret values in the form its kustomization.yaml documents are accepted by
// every binary in production, and the same values without TLS are refused: what the overlay
// sets and what the operator puts into its Secrets is what MSGX_ENV=production demands.
func TestProductionOverlayIsAccepted(t *testing.T) {
	b, err := os.ReadFile("../../deploy/k8s/overlays/production/kustomization.yaml")
	require.NoError(t, err)
	text := string(b)
	literals := regexp.MustCompile(`(?m)^\s+- (MSGX_[A-Z0-9_]+)=(.*)$`).FindAllStringSubmatch(text, -1)
	require.NotEmpty(t, literals, "the overlay's ConfigMap literals")
	url := regexp.MustCompile(`(?m)^#\s+url: (\S+)$`).FindStringSubmatch(text)
	dsn := regexp.MustCompile(`(?m)^#\s+dsn: (\S+)$`).FindStringSubmatch(text)
	require.NotNil(t, url, "kustomization.yaml documents the PostgreSQL URL form")
	require.NotNil(t, dsn, "kustomization.yaml documents the MySQL DSN form")

	overlay := func(t *testing.T) {
		setProduction(t)
		for _, l := range literals {
			t.Setenv(l[1], l[2])
		}
		t.Setenv("MSGX_PG_URL", strings.NewReplacer("PASSWORD", "pw", "HOST", "db.example").Replace(url[1]))
		t.Setenv("MSGX_MYSQL_DSN", strings.NewReplacer("PASSWORD", "pw", "HOST", "aodb.example").Replace(dsn[1]))
	}
	for _, role := range []settings.Role{settings.RoleIngest, settings.RoleProcessor, settings.RoleDispatcher, settings.RoleJobs, settings.RoleConsole} {
		overlay(t)
		require.Equal(t, "production", os.Getenv("MSGX_ENV"))
		_, err := Load(role)
		require.NoError(t, err, "%s: the production overlay's settings and Secret forms", role)
	}

	overlay(t)
	t.Setenv("MSGX_PG_URL", strings.Replace(os.Getenv("MSGX_PG_URL"), "sslmode=verify-full", "sslmode=require", 1))
	_, err = Load(settings.RoleProcessor)
	require.ErrorContains(t, err, "MSGX_PG_URL: production requires sslmode=verify-full")
	overlay(t)
	t.Setenv("MSGX_MYSQL_DSN", strings.Replace(os.Getenv("MSGX_MYSQL_DSN"), "&tls=msgx-ca", "", 1))
	_, err = Load(settings.RoleIngest)
	require.ErrorContains(t, err, "MSGX_MYSQL_DSN: production requires TLS with a verified server")
	overlay(t)
	t.Setenv("MSGX_MYSQL_TLS_CA_FILE", "")
	_, err = Load(settings.RoleJobs)
	require.ErrorContains(t, err, "needs MSGX_MYSQL_TLS_CA_FILE", "the overlay's CA file is what tls=msgx-ca needs")
}
