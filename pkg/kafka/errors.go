package kafka

import (
	"errors"
	"strings"

	"github.com/IBM/sarama"
)

// Error is a Kafka failure with the operation it came from.
type Error struct {
	Op  string
	Err error
}

func (e *Error) Error() string { return "kafka " + e.Op + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// nonRetryable are broker answers about the record itself: sending it again cannot succeed.
var nonRetryable = map[sarama.KError]bool{
	sarama.ErrMessageSizeTooLarge:         true,
	sarama.ErrMessageSetSizeTooLarge:      true,
	sarama.ErrInvalidRecord:               true,
	sarama.ErrInvalidTimestamp:            true,
	sarama.ErrUnsupportedForMessageFormat: true,
}

// NonRetryable reports whether err rejects the record itself (too large, invalid): it goes DEAD
// at once. Every other failure (timeouts, leader moves, lost connections, authorization) is
// retried with backoff.
func NonRetryable(err error) bool {
	if err == nil {
		return false
	}
	var kerr sarama.KError
	if errors.As(err, &kerr) {
		return nonRetryable[kerr]
	}
	var cerr sarama.ConfigurationError
	if errors.As(err, &cerr) {
		// The client's own size check ("larger than configured Producer.MaxMessageBytes").
		return strings.Contains(string(cerr), "larger than")
	}
	var perr sarama.PacketEncodingError
	return errors.As(err, &perr)
}
