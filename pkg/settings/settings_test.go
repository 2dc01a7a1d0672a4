package settings_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/envconf"
	"github.com/msgx/msgx/pkg/settings"
)

// part is a component with a secret inside a value (as the mailbox DSN) and its own check.
type part struct {
	DSN string `envconfig:"MSGX_TEST_DSN" default:"user:pw@host"`
	N   int    `envconfig:"MSGX_TEST_N" default:"1"`
}

func (p part) Validate() error {
	var pr envconf.Problems
	pr.Between("MSGX_TEST_N", int64(p.N), 1, 9)
	return pr.Err()
}

func (p part) Redact(values map[string]string) {
	values["MSGX_TEST_DSN"] = strings.Replace(values["MSGX_TEST_DSN"], ":pw@", ":[redacted]@", 1)
}

type composition struct {
	settings.Process
	Part part
}

func (c composition) Validate() error {
	var p envconf.Problems
	p.Join(c.Process.Validate())
	p.Join(c.Part.Validate())
	return p.Err()
}

// Tests here set process environment variables, so they do not run in parallel.

func TestLoadGivesTheRoleItsHTTPAddrAndValidatesEveryPart(t *testing.T) {
	c, err := settings.Load[composition](settings.RoleDispatcher)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:8083", c.HTTPAddr)
	require.Equal(t, 1, c.Part.N)

	t.Setenv("MSGX_TEST_N", "0")
	t.Setenv("MSGX_AIRPORT_TZ", "Mars/Olympus")
	_, err = settings.Load[composition](settings.RoleJobs)
	require.Error(t, err)
	require.Equal(t, []string{
		`MSGX_AIRPORT_TZ: must be an IANA time zone, got "Mars/Olympus"`,
		"MSGX_TEST_N: must be between 1 and 9, got 0",
	}, strings.Split(err.Error(), "\n"))
}

// The variables that weaken producer rule D3b and the removed ones are refused by every binary,
// whether or not it runs Kafka.
func TestLoadRefusesD3OverridesAndRemovedVariables(t *testing.T) {
	t.Setenv("MSGX_KAFKA_ACKS", "1")
	t.Setenv("MSGX_KAFKA_INPROCESS", "true")
	t.Setenv("MSGX_REQUEST_CLOCK_SKEW", "5s")
	_, err := settings.Load[composition](settings.RoleIngest)
	require.Error(t, err)
	require.Contains(t, err.Error(), "MSGX_KAFKA_ACKS: producer rule D3b")
	require.Contains(t, err.Error(), "MSGX_KAFKA_INPROCESS: removed;")
	require.Contains(t, err.Error(), "MSGX_REQUEST_CLOCK_SKEW: removed; an answer whose DTTM lies before its request's sent time is refused")
}

func TestValuesRedactsSecrets(t *testing.T) {
	t.Setenv("MSGX_PG_URL", "postgres://u:pg-secret@h/d?password=q-secret&sslmode=disable")
	c, err := settings.Load[composition](settings.RoleIngest)
	require.NoError(t, err)
	v := settings.Values(&c)
	require.Len(t, v, len(envconf.Fields(c)))
	require.Equal(t, "postgres://u:%5Bredacted%5D@h/d?password=%5Bredacted%5D&sslmode=disable", v["MSGX_PG_URL"])
	require.Equal(t, "user:[redacted]@host", v["MSGX_TEST_DSN"], "a part that is a Redactor hides its own secret")
	require.Equal(t, "127.0.0.1:8081", v["MSGX_HTTP_ADDR"])
}
