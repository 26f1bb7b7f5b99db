package plugin

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/engine"
	"github.com/watermark-connect/watermark-connect/internal/txn"
)

// exactly_once on the input: its client is a transactional session
// (internal/txn) registered for the output bound to its group, and the
// engine ends transactions instead of committing (internal/engine,
// txn.go). This file holds the input's side: the checks, the
// transactional id, and the session's making.

// validateExactlyOnce checks the rules exactly_once adds.
func (c *config) validateExactlyOnce(bad func(string, ...any)) {
	if !c.exactlyOnce {
		return
	}
	if !c.commitMetadata {
		bad("%s: true needs %s: true: an abort goes back to the delivered ranges of the last commit, which the metadata carries", fieldExactlyOnce, fieldCommitMetadata)
	}
	if c.transactionTimeout > 0 && c.commitPeriod > 0 && c.commitPeriod >= c.transactionTimeout {
		bad("%s (%v) must be below %s (%v): every transaction stays open for a commit period, and the broker aborts one older than its timeout",
			fieldCommitPeriod, c.commitPeriod, fieldTransactionTimeout, c.transactionTimeout)
	}
}

// txnID is the transactional id: transactional_id, or one derived from the
// group and a stable identity of this member (instance_id, else the host
// name), so that a member restarted in the same place aborts its
// predecessor's open transaction at once.
func (c *config) txnID() string {
	if c.transactionalID != "" {
		return c.transactionalID
	}
	id := c.instanceID
	if id == "" {
		id, _ = os.Hostname()
	}
	if id == "" {
		id = "unknown-host"
	}
	return "wmc-" + c.group + "-" + id
}

// newSession makes the transactional session from opts, the client's
// options; startSession makes it ready.
func (in *Input) newSession(opts []kgo.Opt) (*txn.Session, error) {
	s, err := txn.New(txn.Config{Group: in.conf.group, TransactionalID: in.conf.txnID(), TransactionTimeout: in.conf.transactionTimeout}, opts)
	if err != nil {
		return nil, fmt.Errorf("kafka_watermark: invalid client options: %w", err)
	}
	return s, nil
}

// startSession initialises the session's producer id, which fences a
// predecessor with the same transactional id and aborts the transaction it
// left open before this member takes a record; then it begins the first
// transaction and registers the session for the bound output. On error the
// caller closes the session.
func (in *Input) startSession(ctx context.Context, s *txn.Session) error {
	if _, _, err := s.Client().ProducerID(ctx); err != nil {
		return fmt.Errorf("kafka_watermark: %s: cannot initialise the transactional producer %q (its ACLs need WRITE and DESCRIBE on the transactional id, and the cluster transactions, transaction.state.log.replication.factor brokers): %w",
			fieldExactlyOnce, s.TransactionalID(), err)
	}
	if err := s.Begin(); err != nil {
		return fmt.Errorf("kafka_watermark: %s: cannot begin a transaction: %w", fieldExactlyOnce, err)
	}
	if err := txn.Register(s); err != nil {
		return fmt.Errorf("kafka_watermark: %s: %w", fieldExactlyOnce, err)
	}
	in.log.Infof("kafka_watermark: exactly_once: transactional id %q; a kafka_watermark output with %s.consumer_group: %s writes in this input's transactions",
		s.TransactionalID(), fieldExactlyOnce, in.conf.group)
	return nil
}

// outputBindWait bounds how long an output's Connect waits for the input
// of its group to register: Benthos connects both at once, and tries the
// output's Connect again after an error.
const outputBindWait = 10 * time.Second

// outputTxnWriter is the exactly-once recordWriter: it writes through the
// transactional session of the input that consumes group, found in the
// registry on each write (a reconnected input makes a new session). Its
// state is guarded by the Output's lock, as ownProducer's.
type outputTxnWriter struct {
	conf   *outputConfig
	group  string
	unbind func()
}

// connect binds the output to the group, after waiting (bounded) for the
// input: Benthos connects an input and its output at the same time.
func (w *outputTxnWriter) connect(ctx context.Context) error {
	if w.unbind != nil {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, outputBindWait)
	defer cancel()
	if _, err := txn.Lookup(wctx, w.group); err != nil {
		return fmt.Errorf("%s output: %s.consumer_group: %w", OutputName, fieldExactlyOnce, err)
	}
	unbind, err := txn.Bind(w.group, w.conf.produce.RecordPartitioner())
	if err != nil {
		return fmt.Errorf("%s output: %w", OutputName, err)
	}
	w.unbind = unbind
	return nil
}

func (w *outputTxnWriter) write(ctx context.Context, rs []*kgo.Record) []error {
	if w.unbind == nil {
		return nil
	}
	s, err := txn.Lookup(ctxDone, w.group)
	if err != nil {
		errs := make([]error, len(rs))
		for i := range errs {
			errs[i] = fmt.Errorf("%s output: the input that consumes %q is not connected", OutputName, w.group)
		}
		return errs
	}
	return s.Produce(ctx, s.Producer(w.conf.produce), rs)
}

func (w *outputTxnWriter) close() {
	if w.unbind != nil {
		w.unbind()
		w.unbind = nil
	}
}

// ctxDone is an ended context: Lookup with it does not wait.
var ctxDone = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// refusedWithExactlyOnce are the output's fields that set the producer
// client, which under exactly_once is the input's, made before the output:
// they are refused there rather than ignored.
var refusedWithExactlyOnce = []string{
	fieldOutCompression, fieldOutIdempotentWrite, fieldOutTimeout, fieldOutMaxMessageBytes,
	fieldOutBrokerWriteMaxBytes, fieldOutMaxBufferedRecords, fieldOutMaxBufferedBytes,
	fieldOutMaxInFlightRequests, fieldOutRecordRetries, fieldOutDeliveryTimeout,
	fieldOutAutoTopicCreation,
}

// exactlyOnceGroup reads the output's exactly_once.consumer_group, and
// refuses the fields that cannot apply with it.
func exactlyOnceGroup(pc *service.ParsedConfig, bad func(string, ...any)) string {
	if !pc.Contains(fieldExactlyOnce, fieldConsumerGroup) {
		return ""
	}
	g, err := pc.FieldString(fieldExactlyOnce, fieldConsumerGroup)
	if err != nil || strings.TrimSpace(g) == "" {
		bad("%s.%s (%q) must name the consumer group of a kafka_watermark input with exactly_once: true", fieldExactlyOnce, fieldConsumerGroup, g)
		return ""
	}
	var set []string
	defaults := outputDefaults()
	for _, f := range refusedWithExactlyOnce {
		v, err := pc.FieldAny(f)
		if err != nil || v == "" {
			continue // absent, or written empty (as create writes an optional field)
		}
		if d, ok := defaults[f]; !ok || !reflect.DeepEqual(v, d) {
			set = append(set, f)
		}
	}
	if len(set) > 0 {
		bad("%s is refused with %s: under exactly_once the records go through the transactional client of the input that consumes %q, whose producer settings are kgo's defaults (acks all, idempotent); remove it", strings.Join(set, ", "), fieldExactlyOnce, g)
	}
	return g
}

// outputDefaults returns the output's fields of refusedWithExactlyOnce as a
// config that sets none of them reads them: their defaults.
func outputDefaults() map[string]any {
	defaultsOnce.Do(func() {
		defaultsOf = map[string]any{}
		pc, err := OutputConfigSpec().ParseYAML("seed_brokers: [x]\ntopic: t\n", nil)
		if err != nil {
			return
		}
		for _, f := range refusedWithExactlyOnce {
			if v, err := pc.FieldAny(f); err == nil {
				defaultsOf[f] = v
			}
		}
	})
	return defaultsOf
}

var (
	defaultsOnce sync.Once
	defaultsOf   map[string]any
)

// restart closes e, an engine that stopped by itself (its transactional
// producer cannot go on: Engine.Failed), and its session, so that Benthos's
// next Connect makes new ones: a new producer id, and every partition read
// again from its last commit. A Close or another restart first wins.
func (in *Input) restart(e *engine.Engine) {
	in.mu.Lock()
	if in.eng != e {
		in.mu.Unlock()
		return
	}
	in.eng = nil
	sess, dlw, stopWatch := in.sess, in.dlw, in.stopWatch
	in.sess, in.dlw, in.stopWatch = nil, nil, nil
	in.mu.Unlock()
	if sess != nil {
		txn.Unregister(sess)
	}
	if stopWatch != nil {
		stopWatch()
	}
	ctx, cancel := context.WithTimeout(context.Background(), in.conf.drainTimeout)
	defer cancel()
	_ = e.Close(ctx) // nothing to commit: the owner has stopped
	dlw.close()
	if sess != nil {
		sess.Seal()
	}
}
