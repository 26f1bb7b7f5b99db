package plugin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/engine"
	"github.com/watermark-connect/watermark-connect/internal/kafkamsg"
	"github.com/watermark-connect/watermark-connect/internal/txn"
)

func init() {
	if err := service.RegisterBatchInput(InputName, ConfigSpec(), newInputFromConfig); err != nil {
		panic(err)
	}
}

// Register adds the kafka_watermark input and output and the kafka_share
// input to env. Importing the package registers them on Benthos's global
// environment already.
func Register(env *service.Environment) error {
	if err := env.RegisterBatchInput(InputName, ConfigSpec(), newInputFromConfig); err != nil {
		return err
	}
	if err := env.RegisterBatchInput(ShareInputName, ShareConfigSpec(), newShareInputFromConfig); err != nil {
		return err
	}
	return env.RegisterBatchOutput(OutputName, OutputConfigSpec(), newOutputFromConfig)
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
// of these are safe for concurrent use with each other. It is the Benthos
// face of an engine (internal/engine), one per connection.
type Input struct {
	conf    *config
	log     *service.Logger
	m       *engine.Metrics
	connLog *connLog // the clients' logging, shared by those of successive Connects

	mu  sync.Mutex // guards eng, dlw and stopWatch across Connect and Close
	eng *engine.Engine
	dlw *deadLetterWriter // the dead-letter producer, nil without one
	// sess is the transactional session under exactly_once (txn.go), nil
	// otherwise; guarded by mu as eng is.
	sess *txn.Session
	// stopWatch ends the watch of missing topics (watchTopics) and waits
	// for it; nil without one.
	stopWatch func()
	// connFails counts the Connects that failed in a row, for their
	// backoff (connectBackoff); guarded by mu.
	connFails int
	closed    atomic.Bool
}

func newInput(conf *config, res *service.Resources) *Input {
	return &Input{conf: conf, log: res.Logger(), m: engine.NewMetrics(res.Metrics()), connLog: newConnLog(res.Logger())}
}

// Connect creates the client, checks that a seed broker answers (so an
// unreachable cluster or a failed authentication is reported here, and
// Benthos retries with backoff), and starts the engine.
func (in *Input) Connect(ctx context.Context) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed.Load() {
		return service.ErrEndOfInput
	}
	if in.eng != nil {
		return nil
	}
	ec := in.conf.engine()
	dlw, err := newDeadLetterWriter(in.conf)
	if err != nil {
		return err
	}
	if dlw != nil {
		ec.DeadLetter = dlw
	}
	e := engine.New(ec, in.log, in.m)
	var (
		cl   *kgo.Client
		sess *txn.Session
	)
	if in.conf.exactlyOnce {
		if sess, err = in.newSession(in.clientOpts(e)); err != nil {
			dlw.close()
			return err
		}
		cl = sess.Client()
	} else if cl, err = kgo.NewClient(in.clientOpts(e)...); err != nil {
		dlw.close()
		return fmt.Errorf("kafka_watermark: invalid client options: %w", err)
	}
	if err := cl.Ping(ctx); err != nil {
		err = in.connLog.silence.Explain(err) // names a broker that accepted and never answered
		// The engine never ran: mark it stopped so a callback fired by
		// closing this client returns at once.
		e.Abandon()
		cl.Close()
		dlw.close()
		in.connFails++
		wait := connectBackoff(in.connFails)
		return service.NewErrBackOff(fmt.Errorf("kafka_watermark: cannot reach seed brokers %s%s: %w; trying again in %v",
			strings.Join(in.conf.seedBrokers, ","), in.authDescription(), err, wait), wait)
	}
	if sess != nil {
		if err := in.startSession(ctx, sess); err != nil {
			e.Abandon()
			cl.Close()
			dlw.close()
			return err
		}
		e.Transact(sess)
		dlw.useSession(sess)
	}
	in.connFails = 0
	in.eng, in.dlw, in.sess = e, dlw, sess
	e.Start(cl)
	in.log.Infof("kafka_watermark: consuming %v as group %q (%s protocol)", in.conf.topics, in.conf.group, in.conf.groupProtocol)
	if !in.conf.regexpTopics {
		wctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			watchTopics(wctx, kadm.NewClient(cl), in.conf.topics, in.log)
		}()
		in.stopWatch = func() { cancel(); <-done }
	}
	return nil
}

// connectBackoff is how long Benthos waits before the next Connect after
// the fails-th failure in a row: 1s, doubling, at most 30s. Benthos logs
// every failed Connect as an ERROR and, on its own, tries again within a
// second for ever (benthos v4.60.0 internal/component/input/async_reader.go:
// 44-47, MaxInterval one second); a *service.ErrBackOff sets the wait
// instead (public/service/errors.go:45-58, read by the same loop at
// async_reader.go:132-137). A broker that comes back is found within 30s.
func connectBackoff(fails int) time.Duration {
	return min(time.Second<<min(fails-1, 5), 30*time.Second)
}

// authDescription names the security settings for connection errors, never
// a secret.
func (in *Input) authDescription() string { return authDescription(in.conf.conn()) }

// ReadBatch returns the next batch, already registered with its partition's
// tracker. The returned ack function may be called from any goroutine, in
// any order, more than once (later calls are counted and ignored).
func (in *Input) ReadBatch(ctx context.Context) (service.MessageBatch, service.AckFunc, error) {
	in.mu.Lock()
	e := in.eng
	in.mu.Unlock()
	if e == nil {
		return nil, nil, in.stoppedErr()
	}
	b, err := e.Read(ctx)
	if errors.Is(err, engine.ErrStopped) {
		if e.Failed() != nil {
			in.restart(e)
		}
		return nil, nil, in.stoppedErr()
	}
	if err != nil {
		return nil, nil, err
	}
	return in.handOut(e, b)
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
// The ack function lets its first call through to the engine and counts and
// drops any later one, or any call made after a later hand-out of b was
// acknowledged (Batch.TakeAck). Besides b and the messages it is the one
// allocation of a batch's way from hand-out to ack: the guard lives in b,
// the read request is reused (engine.Read), and a plain ack builds nothing.
//
// A retry after a batch error that named the failed messages re-delivers
// only those (Batch.Records). To tell which they were, a batch that may be
// retried is indexed before it leaves (service.MessageBatch.Index), so the
// error's messages map back to records whatever processors did to the
// batch. The index costs allocations per message, so it is made only when
// nack_retry allows retries or a dead-letter topic takes the failed
// messages (only those are dead-lettered).
//
// A message delivered again carries kafka_delivery_attempt: its attempt,
// counting retries, replays and deliveries before a restart
// (internal/engine/attempts.go). A first delivery does not: absent means 1.
// A ninth metadata key turns each message's metadata map from Go's
// one-group small map into a table, and that cost +87% CPU per record in
// converting a batch (64 records of 100 B: 74 to 165 µs per batch, 515 to 707
// allocations, go test -bench on kafkamsg's conversion), and 1.5x the CPU
// per record end to end (make bench-e2e, 8 and 64 partitions, 100 B): far
// over the 2% the key may cost on every first delivery.
func (in *Input) handOut(e *engine.Engine, b *engine.Batch) (service.MessageBatch, service.AckFunc, error) {
	records, sent := b.Records()
	msgs := RecordsToBatch(records, b.LogEnd())
	var index *service.Indexer
	if in.conf.nackRetries != 0 || in.conf.deadLetter != nil {
		index = msgs.Index()
	}
	if n := b.DeliveryAttempt(); n > 1 {
		var delivery any = n // a small int boxes without allocating
		for _, m := range msgs {
			m.MetaSetMut(kafkamsg.MetaDeliveryAttempt, delivery)
		}
	}
	attempt := b.Attempt()
	ack := func(_ context.Context, err error) error {
		if !b.TakeAck(attempt) {
			e.DuplicateAck(b)
			return nil
		}
		var failed []int
		if err != nil {
			failed = failedRecords(err, index, sent)
		}
		e.Ack(b, err, failed)
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

// Close stops fetching, applies every acknowledgement already given, commits
// the final watermarks and leaves the group (engine.Close).
func (in *Input) Close(ctx context.Context) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.closed.Store(true)
	e := in.eng
	if e == nil {
		return nil // never connected, or closed already
	}
	in.eng = nil
	if in.sess != nil {
		// The output's writes find no session from here on; the engine
		// ends the last transaction and closes the client.
		txn.Unregister(in.sess)
		defer in.sess.Seal()
		in.sess = nil
	}
	if in.stopWatch != nil {
		in.stopWatch()
		in.stopWatch = nil
	}
	// The producer outlives the engine: a write the engine waits for
	// (none after Close: it cancels them) never meets a closed client.
	defer in.dlw.close()
	in.dlw = nil
	// Benthos closes inputs with a context that has no deadline: bound the
	// final commit so that an unreachable broker cannot hang the shutdown.
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, in.conf.drainTimeout)
		defer cancel()
	}
	return e.Close(ctx)
}
