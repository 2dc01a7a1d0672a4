package processor

import "github.com/prometheus/client_golang/prometheus"

// IdentityReused is msgx_pump_identity_reused_total, for the tests to read (testutil.ToFloat64).
func (m *Metrics) IdentityReused() prometheus.Counter { return m.identityReused }
