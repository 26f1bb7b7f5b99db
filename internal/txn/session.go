package txn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/watermark-connect/watermark-connect/internal/produce"
)

// ErrAborted is returned by Commit when the transaction ended in an abort
// without an error of its own: a revoke or a loss came while it was open,
// or the group refused its offsets as a zombie's (kgo's End decides,
// txn.go:427-442). Every record it held is discarded.
var ErrAborted = errors.New("the transaction was aborted")

// ErrCannotBegin wraps the error of a Begin after a transaction ended: the
// producer cannot go on (fenced by another producer with the same
// transactional id, or failed for good), and only a new session, a new
// producer id, can.
var ErrCannotBegin = errors.New("the next transaction cannot begin")

// errClosed is the error of a write after Close.
var errClosed = errors.New("the transactional client is closed: its input has stopped")

// Session is the transactional client of one input's lifetime of one
// connection: a kgo.GroupTransactSession plus the gate between writes and
// the ends of transactions. Safe for concurrent use: Produce from any
// number of goroutines; Begin, Commit and Abort from one goroutine at a
// time (the engine's committer), Close once.
type Session struct {
	group string
	id    string
	s     *kgo.GroupTransactSession

	// gate: Produce holds it shared; Commit and Abort hold it alone from
	// the flush to the next Begin; Close holds it alone. closed and p are
	// guarded by it.
	gate   sync.RWMutex
	closed bool
	p      *produce.Producer

	// writes counts the records acknowledged in the open transaction.
	writes atomic.Int64
}

// Config is how New makes a Session.
type Config struct {
	// Group is the consumer group the input consumes: the registry's key.
	Group string
	// TransactionalID names the producer across restarts (kgo.TransactionalID).
	TransactionalID string
	// TransactionTimeout is kgo.TransactionTimeout: how long the broker
	// lets a transaction stay open before it aborts it, so also how long a
	// crashed member's open transaction holds the read_committed readers
	// of what it wrote, unless a member with the same TransactionalID
	// starts first (it aborts it at once, InitProducerId).
	TransactionTimeout time.Duration
}

// New makes the session's client from opts (the input's, group callbacks
// included) with the transactional options added: acks from all in-sync
// replicas (kgo requires it with transactions) and a partitioner that is
// the bound output's. The transaction is not begun: Begin does.
func New(c Config, opts []kgo.Opt) (*Session, error) {
	if c.TransactionalID == "" {
		return nil, errors.New("exactly_once needs a transactional_id")
	}
	t := &Session{group: c.Group, id: c.TransactionalID}
	opts = append(opts,
		kgo.TransactionalID(c.TransactionalID),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(delegating{t}),
	)
	if c.TransactionTimeout > 0 {
		opts = append(opts, kgo.TransactionTimeout(c.TransactionTimeout))
	}
	s, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		return nil, err
	}
	t.s = s
	t.p = produce.New(s.Client(), produce.Config{})
	return t, nil
}

// Client is the session's client: the input polls, pauses and rewinds
// through it. It must not begin or end transactions (Session does).
func (t *Session) Client() *kgo.Client { return t.s.Client() }

// Group is the consumer group the session consumes.
func (t *Session) Group() string { return t.group }

// TransactionalID is the producer's transactional id.
func (t *Session) TransactionalID() string { return t.id }

// Begin begins the first transaction. kgo's BeginTransaction also
// initialises the producer id, which fences and aborts a transaction a
// predecessor with the same transactional id left open.
func (t *Session) Begin() error { return t.s.Begin() }

// Produce writes rs in the open transaction and waits for each record's
// answer (produce.Producer.ProduceAll). p is the bound output's producer
// settings (its size limit and error wording); nil is the defaults.
func (t *Session) Produce(ctx context.Context, p *produce.Producer, rs []*kgo.Record) []error {
	t.gate.RLock()
	defer t.gate.RUnlock()
	if t.closed {
		errs := make([]error, len(rs))
		for i := range errs {
			errs[i] = errClosed
		}
		return errs
	}
	if p == nil {
		p = t.p
	}
	errs := p.ProduceAll(ctx, rs)
	var n int64
	for _, err := range errs {
		if err == nil {
			n++
		}
	}
	t.writes.Add(n)
	return errs
}

// Producer returns a Producer with c's record checks (size limit, error
// wording) that writes through the session's client; use it with Produce.
func (t *Session) Producer(c produce.Config) *produce.Producer {
	return produce.New(t.s.Client(), c)
}

// Offsets is what a transaction commits for the group: each partition's
// offset (with the leader epoch of the record before it) and its commit
// metadata.
type Offsets struct {
	Offsets map[string]map[int32]kgo.EpochOffset
	Meta    map[string]map[int32]string
}

// Result is how a transaction ended.
type Result struct {
	// Records is how many records the transaction held.
	Records int64
	// Took is how long the end took (flush, offsets, EndTxn).
	Took time.Duration
}

// Commit ends the open transaction with o as the group's offsets: the
// records written since Begin and o are committed together, or neither
// is. nil means committed. Any error means the transaction aborted (kgo's
// End aborts on every failure, txn.go:239-330, 427-505) and every record it
// held is discarded; the caller goes back to the last committed offsets.
// Unless last, the next transaction is begun before the gate opens.
func (t *Session) Commit(ctx context.Context, o Offsets, last bool) (Result, error) {
	t.gate.Lock()
	defer t.gate.Unlock()
	start := time.Now()
	if t.closed {
		return Result{}, errClosed
	}
	ctx = kgo.PreTxnCommitFnContext(ctx, func(req *kmsg.TxnOffsetCommitRequest) error {
		setPartitions(req, o)
		return nil
	})
	committed, err := t.s.End(ctx, kgo.TryCommit)
	res := Result{Records: t.writes.Swap(0), Took: time.Since(start)}
	if err == nil && !committed {
		err = ErrAborted
	}
	if !last {
		if berr := t.s.Begin(); berr != nil && err == nil {
			err = fmt.Errorf("committed, but %w: %w", ErrCannotBegin, berr)
		} else if berr != nil {
			err = fmt.Errorf("%w; and %w: %w", err, ErrCannotBegin, berr)
		}
	}
	return res, err
}

// Abort ends the open transaction in an abort: every record written since
// Begin is discarded. kgo's End rewinds the client's fetch positions to
// the group's last commit (txn.go:507-516); the engine rewinds them again
// to its own plan. Unless last, the next transaction is begun.
func (t *Session) Abort(ctx context.Context, last bool) (Result, error) {
	t.gate.Lock()
	defer t.gate.Unlock()
	start := time.Now()
	if t.closed {
		return Result{}, nil
	}
	_, err := t.s.End(ctx, kgo.TryAbort)
	res := Result{Records: t.writes.Swap(0), Took: time.Since(start)}
	if !last {
		if berr := t.s.Begin(); berr != nil {
			err = errors.Join(err, fmt.Errorf("%w: %w", ErrCannotBegin, berr))
		}
	}
	return res, err
}

// Seal refuses writes from now on, once the writes under way returned. The
// client is closed by whoever closes the input's engine.
func (t *Session) Seal() {
	t.gate.Lock()
	t.closed = true
	t.gate.Unlock()
}

// setPartitions replaces the partitions of req, which kgo built from the
// polled positions, with o's. A topic keeps the id kgo gave it; a topic kgo
// did not include has none, and kgo then sends the request at a version
// that names topics (txn.go:1396-1418).
func setPartitions(req *kmsg.TxnOffsetCommitRequest, o Offsets) {
	ids := make(map[string][16]byte, len(req.Topics))
	for _, t := range req.Topics {
		ids[t.Topic] = t.TopicID
	}
	req.Topics = req.Topics[:0]
	for topic, parts := range o.Offsets {
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID = topic, ids[topic]
		for partition, eo := range parts {
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = partition, eo.Offset, eo.Epoch
			if m, ok := o.Meta[topic][partition]; ok {
				rp.Metadata = kmsg.StringPtr(m)
			} else {
				rp.Metadata = kmsg.StringPtr(req.MemberID)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
}

// delegating is the client's partitioner: the bound output's (Bind),
// murmur2 on the key (the Java client's) for a topic produced to before
// one binds (dead letters). kgo asks a partitioner once per topic, when it
// first produces to it (franz-go v1.22.3 pkg/kgo/producer.go:926), so the
// output's choice holds for the client's life.
type delegating struct{ t *Session }

func (d delegating) ForTopic(topic string) kgo.TopicPartitioner {
	if p := boundPartitioner(d.t.group); p != nil {
		return p.ForTopic(topic)
	}
	return produce.Config{}.RecordPartitioner().ForTopic(topic)
}
