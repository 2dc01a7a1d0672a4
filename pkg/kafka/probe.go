package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"
)

// Ping asks a broker for the metadata of the two topics with a bounded request (Probe).
func (p *Producer) Ping(ctx context.Context) error {
	return Probe(ctx, p.cfg, p.cfg.DialTimeout)
}

// Probe makes one real request, a metadata request for the two topics, to the first bootstrap
// broker that answers, the whole probe bounded by timeout (and ctx): a broker that accepts
// connections but does not answer (frozen, overloaded) fails it within the timeout. It is the
// dispatcher's readiness check. (A probe given up at the timeout finishes in the background,
// each of its network steps bounded by the timeout too.)
func Probe(ctx context.Context, c Config, timeout time.Duration) error {
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if timeout <= 0 {
		return &Error{Op: "metadata", Err: context.DeadlineExceeded}
	}
	done := make(chan error, 1)
	go func() { done <- probe(ctx, c, timeout) }()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return &Error{Op: "metadata", Err: fmt.Errorf("no broker answered within %s", timeout)}
	case <-ctx.Done():
		return &Error{Op: "metadata", Err: ctx.Err()}
	}
}

// probe is Probe's request, each network step bounded by timeout.
func probe(ctx context.Context, c Config, timeout time.Duration) error {
	sc, err := newSaramaConfig(c)
	if err != nil {
		return err
	}
	sc.Net.DialTimeout, sc.Net.ReadTimeout, sc.Net.WriteTimeout = timeout, timeout, timeout
	var errs []error
	for _, addr := range c.Brokers {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		b := sarama.NewBroker(addr)
		if err := b.Open(sc); err != nil {
			errs = append(errs, err)
			continue
		}
		req := &sarama.MetadataRequest{Version: 1, Topics: c.Topics()}
		_, err := b.GetMetadata(req)
		_ = b.Close()
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", addr, err))
	}
	return &Error{Op: "metadata", Err: fmt.Errorf("no broker answered within %s: %w", timeout, errors.Join(errs...))}
}
