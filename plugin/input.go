package plugin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"
)

func init() {
	if err := service.RegisterBatchInput(InputName, ConfigSpec(), newInputFromConfig); err != nil {
		panic(err)
	}
}

// Register adds the kafka_watermark input to env. Importing the package
// registers it on Benthos's global environment already.
func Register(env *service.Environment) error {
	return env.RegisterBatchInput(InputName, ConfigSpec(), newInputFromConfig)
}

// newInputFromConfig builds the input with the redpanda input's wrappers,
// in its order: forced timely nacks (timely_nacks_maximum_wait), then
// tracing spans (extract_tracing_map). A forced nack reaches the input as
// any nack does: it is retried or stalls the partition, never committed past.
func newInputFromConfig(pc *service.ParsedConfig, res *service.Resources) (service.BatchInput, error) {
	conf, err := parseConfig(pc)
	if err != nil {
		return nil, err
	}
	var in service.BatchInput = newInput(conf, res)
	if in, err = service.ForceTimelyNacksBatched(pc, in); err != nil {
		return nil, err
	}
	return pc.WrapBatchInputExtractTracingSpanMapping(InputName, in)
}

// Input is the kafka_watermark batch input. Benthos calls Connect, then
// ReadBatch from one goroutine, acks from any goroutine, and Close once; all
// of these are safe for concurrent use with each other.
type Input struct {
	conf *config
	log  *service.Logger
	m    *metrics

	mu     sync.Mutex // guards owner and cl across Connect and Close
	owner  *owner
	cl     *kgo.Client
	poller *poller
	closed atomic.Bool

	// read is the read request ReadBatch reuses, so that a batch costs no
	// request and no reply channel; reading is set while a ReadBatch holds
	// it (takeRead). Benthos calls ReadBatch from one goroutine, its input
	// reader's loop (AsyncReader in benthos v4.60.0), so that call always
	// gets it; a call that overlaps another makes a request of its own.
	read    readReq
	reading atomic.Bool
}

func newInput(conf *config, res *service.Resources) *Input {
	return &Input{conf: conf, log: res.Logger(), m: newMetrics(res.Metrics())}
}

// Connect creates the client, checks that a seed broker answers (so an
// unreachable cluster or a failed authentication is reported here, and
// Benthos retries with backoff), and starts the owner and poll goroutines.
func (in *Input) Connect(ctx context.Context) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed.Load() {
		return service.ErrEndOfInput
	}
	if in.owner != nil {
		return nil
	}
	o := newOwner(in.conf, in.log, in.m)
	in.owner = o
	cl, err := kgo.NewClient(in.clientOpts(o)...)
	if err != nil {
		in.owner = nil
		return fmt.Errorf("kafka_watermark: invalid client options: %w", err)
	}
	if err := cl.Ping(ctx); err != nil {
		// The owner never ran: mark it stopped so a callback fired by
		// closing this client returns at once.
		o.sig.TriggerHasStopped()
		cl.Close()
		in.owner = nil
		return fmt.Errorf("kafka_watermark: cannot reach seed brokers %s%s: %w", strings.Join(in.conf.seedBrokers, ","), in.authDescription(), err)
	}
	o.cl = kgoGroupClient{Client: cl, readCommitted: in.conf.readCommitted}
	in.cl = cl
	in.poller = newPoller()
	o.wakePoll = in.poller.wake
	go o.run()
	go o.committer()
	in.poller.start(cl, o, in.log)
	in.log.Infof("kafka_watermark: consuming %v as group %q (%s protocol)", in.conf.topics, in.conf.group, in.conf.groupProtocol)
	return nil
}

// authDescription names the security settings for connection errors, never
// a secret.
func (in *Input) authDescription() string {
	var parts []string
	if in.conf.tls != nil {
		parts = append(parts, "TLS")
	}
	for _, s := range in.conf.sasl {
		if s.Mechanism != saslNone {
			parts = append(parts, "SASL "+s.Mechanism)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " with " + strings.Join(parts, " and ")
}

// ReadBatch returns the next batch, already registered with its partition's
// tracker. The returned ack function may be called from any goroutine, in
// any order, more than once (later calls are counted and ignored).
func (in *Input) ReadBatch(ctx context.Context) (service.MessageBatch, service.AckFunc, error) {
	in.mu.Lock()
	o := in.owner
	in.mu.Unlock()
	if o == nil {
		if in.closed.Load() {
			return nil, nil, service.ErrEndOfInput
		}
		return nil, nil, service.ErrNotConnected
	}
	req := in.takeRead()
	select {
	case o.readCh <- req:
	case <-ctx.Done():
		in.putRead(req)
		return nil, nil, ctx.Err()
	case <-o.stopped():
		in.putRead(req)
		return nil, nil, in.stoppedErr()
	}
	var b *inflight
	select {
	case b = <-req.reply:
		// The owner took req off its parked reads before it answered, and
		// the answer is read: the owner holds req no more.
		in.putRead(req)
		if b != nil && ctx.Err() != nil {
			in.withdraw(o, withdrawReq{given: b})
			return nil, nil, ctx.Err()
		}
	case <-ctx.Done():
		// Once the owner has the withdrawal, req is done with, though the
		// owner has yet to handle it (drop req from its parked reads, or
		// take back the batch it answered with): the next ReadBatch's
		// request reaches the owner only after that, and only then does
		// that ReadBatch wait on req.reply.
		if in.withdraw(o, withdrawReq{req: req}) {
			in.putRead(req)
		}
		return nil, nil, ctx.Err()
	case <-o.stopped():
		// req may still be parked, or hold the stopped owner's nil: it is
		// never given back, and later reads make their own.
		return nil, nil, in.stoppedErr()
	}
	if b == nil {
		return nil, nil, in.stoppedErr()
	}
	return in.handOut(o, b)
}

// withdraw hands a withdrawal or a give-back to the owner (see
// owner.onWithdraw) and returns once the owner has it: true, or false if
// the owner stopped first.
func (in *Input) withdraw(o *owner, w withdrawReq) bool {
	select {
	case o.withdrawCh <- w:
		return true
	case <-o.stopped():
		return false
	}
}

// takeRead returns in.read if no other ReadBatch holds it, else a request
// of the caller's own.
func (in *Input) takeRead() *readReq {
	if !in.reading.CompareAndSwap(false, true) {
		return &readReq{reply: make(chan *inflight, 1)}
	}
	if in.read.reply == nil {
		in.read.reply = make(chan *inflight, 1)
	}
	return &in.read
}

// putRead gives back req, taken by takeRead, once the owner holds it no
// more and its reply is empty.
func (in *Input) putRead(req *readReq) {
	if req == &in.read {
		in.reading.Store(false)
	}
}

func (in *Input) stoppedErr() error {
	if in.closed.Load() {
		return service.ErrEndOfInput
	}
	return service.ErrNotConnected
}

// handOut converts a batch to fresh messages (on the reader's goroutine, not
// the owner's) and makes its ack function. A retry converts again rather
// than reusing the messages of the attempt before: processors may have
// changed those in place, and a retry must process the records, not its own
// earlier output.
//
// The ack function lets its first call through to the owner and counts and
// drops any later one, or any call made after a later hand-out of b was
// acknowledged (b.takeAck). Besides b and the messages it is the one
// allocation of a batch's way from hand-out to ack: the guard lives in b,
// the read request is reused (Input.read), and a plain ack builds nothing.
//
// A retry after a batch error that named the failed messages re-delivers
// only those (b.only). To tell which they were, a batch that may be retried
// is indexed before it leaves (service.MessageBatch.Index), so the error's
// messages map back to records whatever processors did to the batch. The
// index costs allocations per message, so it is made only when nack_retry
// allows retries.
func (in *Input) handOut(o *owner, b *inflight) (service.MessageBatch, service.AckFunc, error) {
	records, sent := b.raw.records, []int(nil)
	if b.only != nil {
		sent = b.only
		records = make([]*kgo.Record, len(sent))
		for i, r := range sent {
			records[i] = b.raw.records[r]
		}
	}
	msgs := RecordsToBatch(records, b.raw.logEnd)
	var index *service.Indexer
	if in.conf.nackRetries != 0 {
		index = msgs.Index()
	}
	attempt := b.attempt
	ack := func(_ context.Context, err error) error {
		if !b.takeAck(attempt) {
			in.m.dupAcks.Incr(1, b.part.labels[:]...)
			return nil
		}
		var failed []int
		if err != nil {
			failed = failedRecords(err, index, sent)
		}
		in.sendAck(o, b, err, failed)
		return nil
	}
	return msgs, ack, nil
}

// failedRecords maps the messages a batch error names back to indices in
// the batch's records, through the index made at hand-out; sent maps a
// message index to its record index (nil: the same). It returns nil (retry
// the whole batch) when err is no batch error, names no message, or a
// message does not map back. Its errors.As target lives on the heap, so
// even a nil err costs an allocation: the ack function calls it for a nack
// only.
func failedRecords(err error, index *service.Indexer, sent []int) []int {
	var berr *service.BatchError
	if err == nil || index == nil || !errors.As(err, &berr) || berr.IndexedErrors() == 0 {
		return nil
	}
	seen := map[int]bool{}
	whole := false
	berr.WalkMessagesIndexedBy(index, func(i int, _ *service.Message, merr error) bool {
		if merr == nil {
			return true
		}
		if i < 0 || (sent != nil && i >= len(sent)) {
			whole = true
			return false
		}
		if sent != nil {
			i = sent[i]
		}
		seen[i] = true
		return true
	})
	if whole || len(seen) == 0 {
		return nil
	}
	out := make([]int, 0, len(seen))
	for i := range seen {
		out = append(out, i)
	}
	slices.Sort(out)
	return out
}

// sendAck passes a verdict to the owner; once the owner has stopped, every
// verdict is late.
func (in *Input) sendAck(o *owner, b *inflight, err error, failed []int) {
	select {
	case o.ackCh <- ackMsg{b: b, err: err, failed: failed}:
	case <-o.stopped():
		in.m.lateAcks.Incr(1, b.part.labels[:]...)
	}
}

// Close stops fetching, applies every acknowledgement already given, commits
// the final watermarks and leaves the group.
//
// It does not wait for batches still unresolved: Benthos calls Close only
// after every batch it passed to the pipeline has been acknowledged (or the
// stream is being killed), so a batch unresolved then was dropped by Benthos
// unacknowledged, and it is replayed from the final commit. Waiting for it
// would only delay the shutdown by drain_timeout.
func (in *Input) Close(ctx context.Context) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.closed.Store(true)
	o := in.owner
	if o == nil {
		return nil // never connected, or closed already
	}
	in.owner = nil
	// Benthos closes inputs with a context that has no deadline: bound the
	// final commit so that an unreachable broker cannot hang the shutdown.
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, in.conf.drainTimeout)
		defer cancel()
	}
	in.poller.stop(ctx)

	req := closeReq{reply: make(chan closeReply, 1)}
	var last closeReply
	select {
	case o.closeCh <- req:
		select {
		case last = <-req.reply:
		case <-ctx.Done():
		}
	case <-ctx.Done():
	case <-o.stopped():
	}
	var errs []error
	// One commit for every partition, those that revokes were draining
	// included; only then do those revokes return, with nothing to commit.
	if err := o.finalCommit(ctx, last.final, "shutdown"); err != nil {
		// Benthos discards Close's error: say it here.
		in.log.Warnf("%v", err)
		errs = append(errs, err)
	}
	for _, reply := range last.held {
		reply <- commitSet{}
	}
	// Leaving runs the revoke callback, which the closed owner answers at
	// once with nothing to commit.
	in.cl.CloseAllowingRebalance()
	o.sig.TriggerHardStop()
	o.stopIO()
	select {
	case <-o.stopped():
	case <-ctx.Done():
		errs = append(errs, ctx.Err())
	}
	return errors.Join(errs...)
}
