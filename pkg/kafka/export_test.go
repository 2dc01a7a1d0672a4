package kafka

// The sarama configuration builder and its D3b checks, for the tests of package kafka_test.
var (
	NewSaramaConfig    = newSaramaConfig
	NewTxnSaramaConfig = newTxnSaramaConfig
	CheckD3            = checkD3
	CheckProducerD3    = checkProducerD3
)

// FrozenBroker is frozenBroker, for the tests of package kafka_test.
var FrozenBroker = frozenBroker
