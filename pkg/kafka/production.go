package kafka

import (
	"strings"

	"github.com/msgx/msgx/pkg/envconf"
)

// ProductionRefusals are the Kafka settings production refuses: a connection without TLS, and
// above all a SASL PLAIN password sent in clear (docs/security.md).
func (c Config) ProductionRefusals() error {
	var p envconf.Problems
	switch {
	case !c.TLS && strings.EqualFold(c.SASLMechanism, "PLAIN"):
		p.Add("MSGX_KAFKA_SASL_MECHANISM", "PLAIN without MSGX_KAFKA_TLS=true sends the Kafka password in clear; production refuses it")
	case !c.TLS:
		p.Add("MSGX_KAFKA_TLS", "production requires TLS to the Kafka brokers (MSGX_KAFKA_TLS=true)")
	}
	return p.Err()
}
