package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"
)

// Ping asks the brokers for the metadata of the two topics, bounded by the dial timeout (Probe).
func (p *Producer) Ping(ctx context.Context) error {
	return Probe(ctx, p.cfg, p.cfg.DialTimeout)
}

// Probe asks every bootstrap broker at once for the metadata of the two topics and succeeds
// as soon as one answers, the whole probe bounded by timeout (and ctx): a broker that accepts
// connections but does not answer (frozen, overloaded) fails it only when no other broker
// answers within the timeout, wherever it stands in the list. It is the dispatcher's readiness
// check, and tells an outage from a batch's own failure. (Requests still unanswered when the
// probe returns finish in the background, each network step bounded by the timeout.)
func Probe(ctx context.Context, c Config, timeout time.Duration) error {
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if timeout <= 0 {
		return &Error{Op: "metadata", Err: context.DeadlineExceeded}
	}
	answers, err := askAll(c, c.Brokers, timeout)
	if err != nil {
		return err
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	var errs []error
	for range c.Brokers {
		select {
		case a := <-answers:
			if a.err == nil {
				return nil
			}
			errs = append(errs, a.err)
		case <-t.C:
			return &Error{Op: "metadata", Err: fmt.Errorf("no broker answered within %s", timeout)}
		case <-ctx.Done():
			return &Error{Op: "metadata", Err: ctx.Err()}
		}
	}
	return &Error{Op: "metadata", Err: fmt.Errorf("no broker answered within %s: %w", timeout, errors.Join(errs...))}
}

// answering returns the bootstrap brokers that answer Probe's request within timeout, in the
// configured order, or all of them when none does (then the caller's own timeouts decide). A
// client given only these as seeds never starts by waiting a read timeout on a frozen broker.
func answering(c Config, timeout time.Duration) ([]string, error) {
	ok, err := answered(c, timeout)
	if err != nil {
		return nil, err
	}
	live := brokersWhere(c, ok, true)
	if len(live) == 0 {
		return c.Brokers, nil
	}
	return live, nil
}

// answered asks every bootstrap broker Probe's request at once and says which answered within
// timeout.
func answered(c Config, timeout time.Duration) (map[string]bool, error) {
	answers, err := askAll(c, c.Brokers, timeout)
	if err != nil {
		return nil, err
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	ok := map[string]bool{}
	for range c.Brokers {
		select {
		case a := <-answers:
			ok[a.addr] = a.err == nil
		case <-t.C:
			return ok, nil
		}
	}
	return ok, nil
}

// listing asks the brokers at addrs at once which brokers the cluster lists (the advertised
// addresses of the first metadata answer), within timeout and ctx; false: none answered.
func listing(ctx context.Context, c Config, addrs []string, timeout time.Duration) (map[string]bool, bool) {
	answers, err := askAll(c, addrs, timeout)
	if err != nil {
		return nil, false
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	for range addrs {
		select {
		case a := <-answers:
			if a.err == nil {
				listed := make(map[string]bool, len(a.brokers))
				for _, b := range a.brokers {
					listed[b] = true
				}
				return listed, true
			}
		case <-t.C:
			return nil, false
		case <-ctx.Done():
			return nil, false
		}
	}
	return nil, false
}

// answer is one broker's answer to Probe's request: the brokers its metadata lists, or why
// there is none.
type answer struct {
	addr    string
	brokers []string
	err     error
}

// askAll makes Probe's request to each broker of addrs at once, each network step bounded by
// timeout, and delivers one answer per broker on the returned channel (buffered: a late answer
// never blocks its goroutine).
func askAll(c Config, addrs []string, timeout time.Duration) (<-chan answer, error) {
	sc, err := newSaramaConfig(c)
	if err != nil {
		return nil, err
	}
	sc.Net.DialTimeout, sc.Net.ReadTimeout, sc.Net.WriteTimeout = timeout, timeout, timeout
	answers := make(chan answer, len(addrs))
	for _, addr := range addrs {
		go func() {
			brokers, err := askMetadata(sc, addr, c.Topics())
			answers <- answer{addr: addr, brokers: brokers, err: err}
		}()
	}
	return answers, nil
}

// askMetadata makes the metadata request of Probe to the broker at addr on a connection of its
// own and returns the addresses of the brokers the answer lists.
func askMetadata(sc *sarama.Config, addr string, topics []string) ([]string, error) {
	b := sarama.NewBroker(addr)
	if err := b.Open(sc); err != nil {
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	defer func() { _ = b.Close() }()
	req := sarama.NewMetadataRequest(sc.Version, topics)
	// The configured version (at least 2.1: metadata v7), whose request says whether the broker
	// may create a topic: it may not. Metadata below v4 lets a broker with auto-create make them.
	req.AllowAutoTopicCreation = false
	resp, err := b.GetMetadata(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	brokers := make([]string, len(resp.Brokers))
	for i, rb := range resp.Brokers {
		brokers[i] = rb.Addr()
	}
	return brokers, nil
}

// Silent returns the bootstrap brokers that do not answer Probe's request within timeout, in
// the configured order (none: every one answered). The dispatcher names them when its sends
// are blocked.
func Silent(c Config, timeout time.Duration) ([]string, error) {
	ok, err := answered(c, timeout)
	if err != nil {
		return nil, err
	}
	return brokersWhere(c, ok, false), nil
}

// brokersWhere returns the bootstrap brokers whose entry in ok is want, in the configured order.
func brokersWhere(c Config, ok map[string]bool, want bool) []string {
	var out []string
	for _, addr := range c.Brokers {
		if ok[addr] == want {
			out = append(out, addr)
		}
	}
	return out
}
