package processor

import "github.com/prometheus/client_golang/prometheus"

// IdentityReused is msgx_pump_identity_reused_total, for the tests to read (testutil.ToFloat64).
func (m *Metrics) IdentityReused() prometheus.Counter { return m.identityReused }

// ReadAhead is msgx_pump_read_ahead_total for result.
func (m *Metrics) ReadAhead(result string) prometheus.Counter {
	return m.readAhead.WithLabelValues(result)
}

// WaitAhead waits until the run read ahead during the last Step is read.
func (p *Engine) WaitAhead() { p.ahead.wait() }
