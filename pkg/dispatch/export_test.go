package dispatch

// LagSampled is lagSampled, for the tests of the lag's sample.
var LagSampled = lagSampled

// KafkaRecord is kafkaRecord, for tests that produce an event's record themselves.
var KafkaRecord = kafkaRecord
