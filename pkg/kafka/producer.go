package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/IBM/sarama"
)

// Header is one record header.
type Header struct {
	Key   string
	Value string
}

// Record is one message to produce. A nil Value is a null value (a tombstone on a compacted
// topic).
type Record struct {
	Topic   string
	Key     string
	Value   []byte
	Headers []Header
}

// ErrFenced means a newer producer with the same transactional id (a newer dispatcher leader)
// was initialised: this producer can never send again.
var ErrFenced = errors.New("kafka: producer fenced by a newer producer with the same transactional id")

// ErrBroken answers every Send of a producer that abandoned a transaction (send timeout,
// cancellation) or reached a fatal state: it must be closed and a new one dialled.
var ErrBroken = errors.New("kafka: producer broken (transaction abandoned or fatal error): dial a new one")

// ErrAborted answers a record that the broker accepted but whose transaction was aborted
// because another record of the same Send failed: it was never visible to read_committed
// consumers and can be sent again at once.
var ErrAborted = errors.New("kafka: transaction aborted (another record of the batch failed)")

// Producer sends records with D3b: one transactional producer per topic of the configuration.
// Send may be called concurrently for different topics; the sends of one topic take turns.
type Producer struct {
	cfg    Config
	client sarama.Client // metadata and admin requests
	topics map[string]*topicProducer
	watch  *watch // the dialer of every client: cuts off a broker the cluster fenced
}

// topicProducer is the transactional producer of one topic.
type topicProducer struct {
	topic string
	mu    sync.Mutex // one transaction at a time
	cur   *txnProducer
}

type txnProducer struct {
	client sarama.Client
	sync   sarama.SyncProducer
	// broken is set when a transaction was abandoned (timeout, cancellation) or the producer
	// reached a fatal state (fenced): it must be replaced before the next transaction.
	broken atomic.Pointer[error]
	done   sync.WaitGroup // the abandoned transaction's goroutine
}

// Dial builds the D3b configuration (refusing a violation), connects, and initialises one
// transactional producer per topic; initialising fences any older producer of the same
// transactional id (a deposed leader's). Its clients start from the bootstrap brokers that
// answer a metadata request within the check timeout (all of them when none does): sarama
// picks a seed broker at random for each client, and a frozen one would cost a read timeout
// per client before the dial went on. Every client connects through the producer's watch,
// which cuts off a broker the cluster has fenced while a send or the dial waits (watch.go).
func Dial(c Config) (*Producer, error) {
	sc, err := newSaramaConfig(c)
	if err != nil {
		return nil, err
	}
	if err := VerifyD3(c); err != nil {
		return nil, err
	}
	seeds := c // the producer keeps every broker for Ping; its clients start from those answering
	if seeds.Brokers, err = answering(c, c.CheckTimeout); err != nil {
		return nil, err
	}
	w := newWatch(c)
	defer w.during()()
	watched(sc, w)
	client, err := sarama.NewClient(seeds.Brokers, sc)
	if err != nil {
		return nil, &Error{Op: "connect", Err: err}
	}
	p := &Producer{cfg: c, client: client, topics: map[string]*topicProducer{}, watch: w}
	for _, topic := range c.Topics() {
		tp, err := dialTxn(seeds, topic, w)
		if err != nil {
			_ = p.Close()
			return nil, err
		}
		p.topics[topic] = &topicProducer{topic: topic, cur: tp}
	}
	return p, nil
}

// watched makes sc's clients connect through w.
func watched(sc *sarama.Config, w *watch) {
	sc.Net.Proxy.Enable = true
	sc.Net.Proxy.Dialer = w
}

func dialTxn(c Config, topic string, w *watch) (*txnProducer, error) {
	sc, err := newTxnSaramaConfig(c, topic)
	if err != nil {
		return nil, err
	}
	watched(sc, w)
	client, err := sarama.NewClient(c.Brokers, sc)
	if err != nil {
		return nil, &Error{Op: "connect", Err: err}
	}
	sp, err := sarama.NewSyncProducerFromClient(client) // InitProducerID: fences older producers
	if err != nil {
		_ = client.Close()
		if isFenced(err) {
			return nil, &Error{Op: "init producer " + sc.Producer.Transaction.ID, Err: fmt.Errorf("%w: %w", ErrFenced, err)}
		}
		return nil, &Error{Op: "init producer " + sc.Producer.Transaction.ID, Err: err}
	}
	return &txnProducer{client: client, sync: sp}, nil
}

// close stops the producer. A broken one's abandoned transaction may be waiting on a broker
// that does not answer (frozen): its client is closed first, which ends the requests on the
// client's open connections at once; a request sarama is still making on a new connection
// (a metadata refresh of a retry) runs to its read timeouts, so the abandoned transaction's
// goroutine and the producer's own close finish in the background and a replacement can be
// dialled without waiting for them. The abandoned transaction never commits (it aborts), and
// the replacement's initialisation fences whatever it might still send.
func (t *txnProducer) close() error {
	if t.broken.Load() != nil {
		err := t.client.Close()
		go func() {
			t.done.Wait()
			_ = t.sync.Close()
		}()
		if errors.Is(err, sarama.ErrClosedClient) {
			err = nil
		}
		return err
	}
	t.done.Wait()
	err := errors.Join(t.sync.Close(), t.client.Close())
	if errors.Is(err, sarama.ErrClosedClient) {
		err = nil
	}
	return err
}

// Close stops the producers and the client.
func (p *Producer) Close() error {
	var err error
	for _, tp := range p.topics {
		tp.mu.Lock()
		if tp.cur != nil {
			err = errors.Join(err, tp.cur.close())
			tp.cur = nil
		}
		tp.mu.Unlock()
	}
	if cerr := p.client.Close(); cerr != nil && !errors.Is(cerr, sarama.ErrClosedClient) {
		err = errors.Join(err, cerr)
	}
	return err
}

// Send produces recs and returns one error per record (nil: acknowledged by all in-sync
// replicas and, transactional, committed). Records with the same key go to the same partition
// in the given order. Transactional, the records of each topic are one transaction: when one
// record fails, the others of its topic answer ErrAborted. Send returns within the send timeout
// (or when ctx ends): a transaction still unfinished then is abandoned, never committed, and
// the topic's producer is replaced at the next Send (which aborts it).
func (p *Producer) Send(ctx context.Context, recs []Record) []error {
	errs := make([]error, len(recs))
	if len(recs) == 0 {
		return errs
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.SendTimeout)
	defer cancel()
	defer p.watch.during()()
	byTopic := map[string][]int{}
	var order []string
	for i, r := range recs {
		if _, ok := byTopic[r.Topic]; !ok {
			order = append(order, r.Topic)
		}
		byTopic[r.Topic] = append(byTopic[r.Topic], i)
	}
	for _, topic := range order {
		idx := byTopic[topic]
		tp := p.topics[topic]
		if tp == nil {
			for _, i := range idx {
				errs[i] = &Error{Op: "produce", Err: fmt.Errorf("topic %q is not one of the configured topics", topic)}
			}
			continue
		}
		sub := make([]Record, len(idx))
		for j, i := range idx {
			sub[j] = recs[i]
		}
		for j, err := range tp.send(ctx, sub) {
			errs[idx[j]] = err
		}
	}
	return errs
}

// Broken reports why the producer cannot send any more (nil: it can).
func (p *Producer) Broken() error {
	for _, tp := range p.topics {
		tp.mu.Lock()
		cur := tp.cur
		tp.mu.Unlock()
		if cur == nil {
			return ErrBroken
		}
		if err := cur.broken.Load(); err != nil {
			return fmt.Errorf("%w: %w", ErrBroken, *err)
		}
	}
	return nil
}

// send runs one transaction of the topic's records.
func (tp *topicProducer) send(ctx context.Context, recs []Record) []error {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if tp.cur == nil {
		return fill(len(recs), &Error{Op: "produce", Err: ErrBroken})
	}
	if err := tp.cur.broken.Load(); err != nil {
		return fill(len(recs), &Error{Op: "produce", Err: fmt.Errorf("%w: %w", ErrBroken, *err)})
	}
	cur := tp.cur
	var abandoned atomic.Bool
	res := make(chan []error, 1)
	cur.done.Add(1)
	go func() {
		defer cur.done.Done()
		res <- cur.transaction(recs, &abandoned)
	}()
	select {
	case errs := <-res:
		return errs
	case <-ctx.Done():
		abandoned.Store(true)
		err := fmt.Errorf("transaction abandoned: %w", ctx.Err())
		cur.broken.Store(&err)
		return fill(len(recs), &Error{Op: "produce", Err: fmt.Errorf("%w: %w", ErrBroken, err)})
	}
}

// transaction is begin, produce, commit; every failure aborts (a fatal one breaks the
// producer). abandoned, once set, turns the commit into an abort. A producer that a record's
// answer says is fenced, or that is not ready for another transaction afterwards (an abort or
// epoch bump that did not finish, a transition its transaction manager refused), is broken: its
// owner dials a new one, whose initialisation aborts whatever this one left open. The failed
// records of a broken producer answer ErrBroken (with the cause): the producer failed, not them.
func (t *txnProducer) transaction(recs []Record, abandoned *atomic.Bool) []error {
	errs := t.run(recs, abandoned)
	if err := fenced(errs); err != nil {
		t.broken.Store(&err)
		return errs
	}
	if st := t.sync.TxnStatus(); st&sarama.ProducerTxnFlagReady == 0 && t.broken.Load() == nil {
		err := fmt.Errorf("transaction left the producer %s", st)
		if first := firstErr(errs); first != nil {
			err = fmt.Errorf("%w: %w", err, first)
		}
		t.broken.Store(&err)
	}
	if t.broken.Load() == nil {
		return errs
	}
	for i, err := range errs {
		var kerr *Error
		if err != nil && !errors.Is(err, ErrBroken) && errors.As(err, &kerr) {
			errs[i] = &Error{Op: kerr.Op, Err: fmt.Errorf("%w: %w", ErrBroken, kerr.Err)}
		}
	}
	return errs
}

// run is one transaction: begin, produce, then commit, or abort when a record failed or the
// send was abandoned.
func (t *txnProducer) run(recs []Record, abandoned *atomic.Bool) []error {
	fail := func(op string, err error) []error {
		if t.sync.TxnStatus()&sarama.ProducerTxnFlagFatalError != 0 {
			if isFenced(err) {
				err = fmt.Errorf("%w: %w", ErrFenced, err)
			}
			t.broken.Store(&err)
		}
		return fill(len(recs), &Error{Op: op, Err: err})
	}
	if err := t.sync.BeginTxn(); err != nil {
		return fail("begin transaction", err)
	}
	errs := produce(t.sync, recs)
	failed := false
	for _, err := range errs {
		failed = failed || err != nil
	}
	if failed || abandoned.Load() {
		if err := t.sync.AbortTxn(); err != nil {
			return fail("abort transaction", err)
		}
		if t.sync.TxnStatus()&sarama.ProducerTxnFlagFatalError != 0 {
			return fail("produce", firstErr(errs))
		}
		for i, err := range errs {
			if err == nil {
				errs[i] = &Error{Op: "produce", Err: ErrAborted}
			}
		}
		return errs
	}
	if err := t.sync.CommitTxn(); err != nil {
		if t.sync.TxnStatus()&sarama.ProducerTxnFlagAbortableError != 0 {
			_ = t.sync.AbortTxn()
		}
		return fail("commit transaction", err)
	}
	return errs
}

// isFenced reports a broker answer that means a newer producer took the transactional id:
// PRODUCER_FENCED, or INVALID_PRODUCER_EPOCH, which a real broker answers on the produce path
// (and older request versions everywhere) for the same cause.
func isFenced(err error) bool {
	return errors.Is(err, sarama.ErrProducerFenced) || errors.Is(err, sarama.ErrInvalidProducerEpoch)
}

// fenced returns the first answer saying the producer was fenced.
func fenced(errs []error) error {
	for _, err := range errs {
		if errors.Is(err, ErrFenced) {
			return err
		}
	}
	return nil
}

func firstErr(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func fill(n int, err error) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// produce sends recs with sp and answers each.
func produce(sp sarama.SyncProducer, recs []Record) []error {
	errs := make([]error, len(recs))
	msgs := make([]*sarama.ProducerMessage, len(recs))
	for i, r := range recs {
		m := &sarama.ProducerMessage{Topic: r.Topic, Key: sarama.StringEncoder(r.Key), Metadata: i}
		if r.Value != nil {
			m.Value = sarama.ByteEncoder(r.Value)
		}
		if len(r.Headers) > 0 {
			m.Headers = make([]sarama.RecordHeader, len(r.Headers))
			for j, h := range r.Headers {
				m.Headers[j] = sarama.RecordHeader{Key: []byte(h.Key), Value: []byte(h.Value)}
			}
		}
		msgs[i] = m
	}
	err := sp.SendMessages(msgs)
	if err == nil {
		return errs
	}
	var perrs sarama.ProducerErrors
	if !errors.As(err, &perrs) {
		return fill(len(recs), &Error{Op: "produce", Err: err})
	}
	for _, pe := range perrs {
		if i, ok := pe.Msg.Metadata.(int); ok && i >= 0 && i < len(errs) {
			perr := pe.Err
			if isFenced(perr) {
				perr = fmt.Errorf("%w: %w", ErrFenced, perr)
			}
			errs[i] = &Error{Op: "produce", Err: perr}
		}
	}
	return errs
}
