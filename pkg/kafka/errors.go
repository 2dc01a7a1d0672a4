package kafka

import (
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

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

// unavailable are broker answers that say the cluster cannot take a record now (a leader or a
// coordinator moving or gone, too few in-sync replicas, a busy coordinator), whatever the record.
var unavailable = map[sarama.KError]bool{
	sarama.ErrNotEnoughReplicas:               true,
	sarama.ErrNotEnoughReplicasAfterAppend:    true,
	sarama.ErrNotLeaderForPartition:           true,
	sarama.ErrLeaderNotAvailable:              true,
	sarama.ErrRequestTimedOut:                 true,
	sarama.ErrBrokerNotAvailable:              true,
	sarama.ErrReplicaNotAvailable:             true,
	sarama.ErrNetworkException:                true,
	sarama.ErrKafkaStorageError:               true,
	sarama.ErrOffsetsLoadInProgress:           true,
	sarama.ErrConsumerCoordinatorNotAvailable: true,
	sarama.ErrNotCoordinatorForConsumer:       true,
	sarama.ErrConcurrentTransactions:          true,
}

// Unavailable reports whether err says the cluster, not the record, is at fault: one of the
// answers above, a broken producer (ErrBroken), a lost or refused connection, or no broker left
// to ask. A batch failing only for such causes is an outage: sending it again later can succeed.
// ErrAborted is neither: it says another record failed the transaction.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var kerr sarama.KError
	if errors.As(err, &kerr) {
		return unavailable[kerr]
	}
	var nerr net.Error
	return errors.Is(err, ErrBroken) || errors.Is(err, sarama.ErrOutOfBrokers) || errors.Is(err, sarama.ErrNotConnected) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &nerr)
}
