package mailbox_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/mailbox"
)

// TestProductionRefusesAProcessedValueNotAgreed: production writes to CMINMSGS_STATUS only a
// value of MSGX_MAILBOX_PROCESSED_VALUES_ALLOWED; the empty value (STATUS untouched) is always
// allowed.
func TestProductionRefusesAProcessedValueNotAgreed(t *testing.T) {
	t.Parallel()
	verified := mailbox.Config{MySQLDSN: "u@tcp(aodb:3306)/m?tls=true", PollInterval: time.Second}
	cases := []struct {
		value   string
		allowed []string
		refused string
	}{
		{"", nil, ""},
		{"", []string{"PROCESSED"}, ""},
		{"PROCESSED", []string{"PROCESSED", "HANDLED"}, ""},
		{"PROCESSED", nil, `MSGX_MAILBOX_PROCESSED_VALUE: production requires a value the AODB team agreed to (MSGX_MAILBOX_PROCESSED_VALUES_ALLOWED: none), got "PROCESSED"`},
		{"processed", []string{"PROCESSED"}, `(MSGX_MAILBOX_PROCESSED_VALUES_ALLOWED: PROCESSED), got "processed"`},
	}
	for _, c := range cases {
		cfg := verified
		cfg.ProcessedValue, cfg.ProcessedValuesAllowed = c.value, c.allowed
		err := cfg.ProductionRefusals()
		if c.refused == "" {
			require.NoError(t, err, "%q of %v", c.value, c.allowed)
			continue
		}
		require.ErrorContains(t, err, c.refused)
		require.NoError(t, cfg.Validate(), "development accepts it")
	}
}
