package engine

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrStopped is returned by Read once the engine has stopped (closed, or
// never started).
var ErrStopped = errors.New("kafka_watermark: the engine has stopped")

// Engine is the input's face onto the owner goroutine: every method is a
// message to it, and none waits on the network while holding state. It is
// made unstarted by New, bound to a kgo client by Start, and stopped by
// Close. Safe for concurrent use, with one rule from Benthos: Read is called
// by one reader at a time as a rule (a call that overlaps another still
// works, with a request of its own).
type Engine struct {
	o *owner
	// cl and poller are the client and the poll loop (poll.go), set by
	// Start.
	cl     *kgo.Client
	poller *poller
	// read is the reader's request, reused for every Read so that a hand-out
	// allocates no request; reading says a Read holds it (takeRead).
	// Benthos calls ReadBatch from one goroutine, its input reader's loop
	// (AsyncReader in benthos v4.60.0), so that call always gets it; a call
	// that overlaps another makes a request of its own.
	read    readReq
	reading atomic.Bool
}

// New returns an engine for one input's lifetime of one client. log and
// m are the input's, m made once for all its engines (NewMetrics).
func New(conf Config, log *service.Logger, m *Metrics) *Engine {
	return &Engine{o: newOwner(&conf, log, m)}
}

// Options returns the kgo options that bind the client's group callbacks to
// this engine: assignment, revocation, loss and, when the group protocol
// needs it, the heartbeat hooks of the fence (fence.go). The offset-fetch
// callback is the caller's, which hands its response to OffsetsFetched.
func (e *Engine) Options() []kgo.Opt {
	o := e.o
	opts := []kgo.Opt{
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { o.assigned(m) }),
		kgo.OnPartitionsRevoked(func(ctx context.Context, _ *kgo.Client, m map[string][]int32) { o.revokeOrLose(ctx, m, false) }),
		kgo.OnPartitionsLost(func(ctx context.Context, _ *kgo.Client, m map[string][]int32) { o.revokeOrLose(ctx, m, true) }),
	}
	if o.fence.hb != nil {
		opts = append(opts, kgo.WithHooks(o.fence.hb))
	}
	return opts
}

// Start runs the owner, its committer and the poll loop on cl.
func (e *Engine) Start(cl *kgo.Client) {
	o := e.o
	o.cl = kgoGroupClient{Client: cl, readCommitted: o.conf.ReadCommitted}
	if o.conf.Txn != nil {
		o.cl = txnClient{kgoGroupClient: kgoGroupClient{Client: cl, readCommitted: o.conf.ReadCommitted}, t: o.conf.Txn}
	}
	e.poller = newPoller()
	o.polls.wakePoll = e.poller.wake
	e.cl = cl
	go o.run()
	go o.committer()
	e.poller.start(cl, o, o.log)
}

// Transact makes the engine end transactions through t instead of
// committing (exactly_once; internal/engine txn.go). Called before Start.
func (e *Engine) Transact(t Transactor) {
	e.o.conf.Txn = t
	e.o.txn.on = true
}

// Failed returns, once the engine has stopped by itself, why: under
// exactly once, a producer that cannot begin another transaction. nil while
// it runs, and after a Close.
func (e *Engine) Failed() error {
	select {
	case <-e.o.stopped():
		return e.o.txn.fatal // written by the run goroutine before it stopped
	default:
		return nil
	}
}

// Abandon marks an engine that will never start as stopped, so that a
// callback fired by closing its client returns at once.
func (e *Engine) Abandon() { e.o.sig.TriggerHasStopped() }

// OffsetsFetched hands the committed offsets and metadata of newly assigned
// partitions (kgo's OnOffsetsFetched) to the owner, before any fetch, and
// returns the partitions that have no committed offset.
func (e *Engine) OffsetsFetched(ctx context.Context, resp *kmsg.OffsetFetchResponse) (missing map[string][]int32) {
	o := e.o
	commits := map[topicPartition]fetchedCommit{}
	missing = map[string][]int32{}
	each := func(topic string, partition int32, offset int64, epoch int32, meta *string) {
		fc := fetchedCommit{offset: offset, leaderEpoch: epoch}
		if meta != nil {
			fc.meta = *meta
		}
		commits[topicPartition{topic, partition}] = fc
		if offset < 0 {
			missing[topic] = append(missing[topic], partition)
		}
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			each(t.Topic, p.Partition, p.Offset, p.LeaderEpoch, p.Metadata)
		}
	}
	for _, g := range resp.Groups {
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				each(t.Topic, p.Partition, p.Offset, p.LeaderEpoch, p.Metadata)
			}
		}
	}
	req := fetchedReq{commits: commits, done: make(chan struct{})}
	select {
	case o.inbox.fetchedCh <- req:
		select {
		case <-req.done:
		case <-o.stopped():
		}
	case <-o.stopped():
	case <-ctx.Done():
	}
	return missing
}

// Read returns the next batch, already registered with its partition's
// tracker: ctx's error when ctx ends first, ErrStopped when the engine
// stops. A batch that Read received after ctx ended goes back to the owner,
// to go out again first (owner.onWithdraw).
func (e *Engine) Read(ctx context.Context) (*Batch, error) {
	o := e.o
	req := e.takeRead()
	select {
	case o.inbox.readCh <- req:
	case <-ctx.Done():
		e.putRead(req)
		return nil, ctx.Err()
	case <-o.stopped():
		e.putRead(req)
		return nil, ErrStopped
	}
	var b *Batch
	select {
	case b = <-req.reply:
		// The owner took req off its parked reads before it answered, and
		// the answer is read: the owner holds req no more.
		e.putRead(req)
		if b != nil && ctx.Err() != nil {
			e.withdraw(withdrawReq{given: b})
			return nil, ctx.Err()
		}
	case <-ctx.Done():
		// Once the owner has the withdrawal, req is done with, though the
		// owner has yet to handle it (drop req from its parked reads, or
		// take back the batch it answered with): the next Read's request
		// reaches the owner only after that, and only then does that Read
		// wait on req.reply.
		if e.withdraw(withdrawReq{req: req}) {
			e.putRead(req)
		}
		return nil, ctx.Err()
	case <-o.stopped():
		// req may still be parked, or hold the stopped owner's nil: it is
		// never given back, and later reads make their own.
		return nil, ErrStopped
	}
	if b == nil {
		return nil, ErrStopped
	}
	return b, nil
}

// withdraw hands a withdrawal or a give-back to the owner (see
// owner.onWithdraw) and returns once the owner has it: true, or false if
// the owner stopped first.
func (e *Engine) withdraw(w withdrawReq) bool {
	select {
	case e.o.inbox.withdrawCh <- w:
		return true
	case <-e.o.stopped():
		return false
	}
}

// takeRead returns e.read if no other Read holds it, else a request of the
// caller's own.
func (e *Engine) takeRead() *readReq {
	if !e.reading.CompareAndSwap(false, true) {
		return &readReq{reply: make(chan *Batch, 1)}
	}
	if e.read.reply == nil {
		e.read.reply = make(chan *Batch, 1)
	}
	return &e.read
}

// putRead gives back req, taken by takeRead, once the owner holds it no
// more and its reply is empty.
func (e *Engine) putRead(req *readReq) {
	if req == &e.read {
		e.reading.Store(false)
	}
}

// Ack passes a hand-out's verdict to the owner: err nil for delivered;
// failed, for a nack, the indices in the batch's records (Batch.Records's
// sent, mapped back) that a batch error named failed, or nil for all. The
// caller has claimed the hand-out's ack with TakeAck. Once the owner has
// stopped, every verdict is late.
func (e *Engine) Ack(b *Batch, err error, failed []int) {
	select {
	case e.o.inbox.ackCh <- ackMsg{b: b, err: err, failed: failed}:
	case <-e.o.stopped():
		e.o.m.lateAcks.Incr(1, b.part.labels[:]...)
	}
}

// DuplicateAck counts an ack function called again, or after a later
// hand-out of its batch was acknowledged (TakeAck said no).
func (e *Engine) DuplicateAck(b *Batch) { e.o.m.dupAcks.Incr(1, b.part.labels[:]...) }

// Close stops fetching, applies every acknowledgement already given, commits
// the final watermarks and leaves the group, within ctx.
//
// It does not wait for batches still unresolved: Benthos calls Close only
// after every batch it passed to the pipeline has been acknowledged (or the
// stream is being killed), so a batch unresolved then was dropped by Benthos
// unacknowledged, and it is replayed from the final commit. Waiting for it
// would only delay the shutdown by drain_timeout.
func (e *Engine) Close(ctx context.Context) error {
	o := e.o
	e.poller.stop(ctx)
	req := closeReq{reply: make(chan closeReply, 1)}
	var last closeReply
	select {
	case o.inbox.closeCh <- req:
		select {
		case last = <-req.reply:
		case <-ctx.Done():
		}
	case <-ctx.Done():
	case <-o.stopped():
	}
	var errs []error
	if o.txn.on && (last.abortTxn != "" || last.final.empty()) {
		// Under exactly once the open transaction ends here: aborted,
		// or empty (nothing to commit).
		if _, err := o.conf.Txn.Abort(ctx, true); err != nil {
			o.log.Warnf("kafka_watermark: exactly_once: aborting the last transaction at shutdown failed: %v", err)
		}
		if last.abortTxn != "" {
			o.log.Infof("kafka_watermark: exactly_once: the last transaction aborted at shutdown (%s); the next owner reads its records again", last.abortTxn)
			o.m.txnEnded(false, ReasonShutdown, 0, 0)
		}
	}
	// One commit for every partition, those that revokes were draining
	// included; only then do those revokes return, with nothing to commit.
	if err := o.finalCommit(ctx, last.final, "shutdown"); err != nil {
		// Benthos discards Close's error: say it here.
		o.log.Warnf("%v", err)
		errs = append(errs, err)
	}
	for _, reply := range last.held {
		reply <- commitSet{}
	}
	// Leaving runs the revoke callback, which the closed owner answers at
	// once with nothing to commit.
	e.cl.CloseAllowingRebalance()
	o.sig.TriggerHardStop()
	o.stopIO()
	select {
	case <-o.stopped():
	case <-ctx.Done():
		errs = append(errs, ctx.Err())
	}
	return errors.Join(errs...)
}
