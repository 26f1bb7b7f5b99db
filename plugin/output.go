package plugin

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/produce"
)

func init() {
	if err := service.RegisterBatchOutput(OutputName, OutputConfigSpec(), newOutputFromConfig); err != nil {
		panic(err)
	}
}

// newOutputFromConfig builds the output with the redpanda output's wrapper
// for inject_tracing_map, its batch policy and its max_in_flight.
func newOutputFromConfig(pc *service.ParsedConfig, res *service.Resources) (service.BatchOutput, service.BatchPolicy, int, error) {
	conf, err := parseOutputConfig(pc)
	if err != nil {
		return nil, service.BatchPolicy{}, 0, err
	}
	var out service.BatchOutput = newOutput(conf, res)
	if out, err = pc.WrapBatchOutputExtractTracingSpanMapping(OutputName, out); err != nil {
		return nil, service.BatchPolicy{}, 0, err
	}
	return out, conf.batching, conf.maxInFlight, nil
}

// recordWriter is where an output's records go, and the one seam between
// the two guarantees the output is designed for (issue 32):
//
//   - at least once (ownProducer): a producer client of the output's own;
//   - exactly once, to come: the transactional client of the input that
//     consumes the bound consumer group, found in a process-wide registry
//     by group. Its connect waits for that input, its write produces inside
//     the input's open transaction and tells the input which transaction
//     holds the records, and its close leaves the client to the input.
//
// Building records (output_records.go) and turning per-record outcomes
// into a batch error (batchError) are the same for both.
type recordWriter interface {
	// connect makes the writer ready; called again after an error.
	connect(ctx context.Context) error
	// write produces rs and returns each record's outcome, nil once every
	// in-sync replica has it (produce.Producer.ProduceAll); a nil record
	// is skipped, its outcome nil.
	write(ctx context.Context, rs []*kgo.Record) []error
	// close releases what connect made.
	close()
}

// Output is the kafka_watermark batch output. Benthos calls Connect, then
// WriteBatch from up to max_in_flight goroutines at once, and Close once; all
// of these are safe for concurrent use with each other.
type Output struct {
	conf *outputConfig
	log  *service.Logger

	mu sync.RWMutex // guards w's connected state: writes share it, Connect and Close hold it
	w  recordWriter
}

func newOutput(conf *outputConfig, res *service.Resources) *Output {
	var w recordWriter = &ownProducer{conf: conf}
	if conf.txnGroup != "" {
		w = &outputTxnWriter{conf: conf, group: conf.txnGroup}
	}
	return &Output{conf: conf, log: res.Logger(), w: w}
}

// Connect makes the producer and checks that a seed broker answers, so that
// an unreachable cluster or a failed authentication is reported here and
// Benthos retries with backoff.
func (o *Output) Connect(ctx context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.w.connect(ctx); err != nil {
		return err
	}
	o.log.Infof("%s output: writing to %s", OutputName, o.conf.topicText)
	return nil
}

// WriteBatch writes a record for each message of b and returns once the
// broker answered for every one: nil when all were written, a
// *service.BatchError naming each message whose record was not (the others
// were written), service.ErrNotConnected before Connect.
func (o *Output) WriteBatch(ctx context.Context, b service.MessageBatch) error {
	rs, failed := o.conf.records(b)
	o.mu.RLock()
	outcomes := o.w.write(ctx, rs)
	o.mu.RUnlock()
	if outcomes == nil {
		return service.ErrNotConnected
	}
	if failed == nil {
		failed = outcomes
	} else {
		for i, err := range outcomes {
			if err != nil {
				failed[i] = err
			}
		}
	}
	return batchError(b, failed)
}

// Close closes the producer, once the writes running have returned (each
// is bounded by its context, which Benthos ends at a forced shutdown).
func (o *Output) Close(context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.w.close()
	return nil
}

// ownProducer is the at-least-once recordWriter: a producer client of the
// output's own, made by connect and closed by close. Its state is guarded
// by the Output's lock: connect and close hold it, writes share it.
type ownProducer struct {
	conf *outputConfig
	cl   *kgo.Client
	p    *produce.Producer // nil while not connected
}

func (w *ownProducer) connect(ctx context.Context) error {
	if w.p != nil {
		return nil
	}
	cl, p, err := produce.NewClient(w.conf.conn.Opts(), w.conf.produce)
	if err != nil {
		return fmt.Errorf("%s output: invalid client options: %w", OutputName, err)
	}
	if err := cl.Ping(ctx); err != nil {
		cl.Close()
		return fmt.Errorf("%s output: cannot reach seed brokers %s%s: %w",
			OutputName, strings.Join(w.conf.conn.SeedBrokers, ","), authDescription(w.conf.conn), err)
	}
	w.cl, w.p = cl, p
	return nil
}

// write returns nil when not connected.
func (w *ownProducer) write(ctx context.Context, rs []*kgo.Record) []error {
	if w.p == nil {
		return nil
	}
	return produceSome(ctx, w.p, rs)
}

func (w *ownProducer) close() {
	if w.cl != nil {
		w.cl.Close()
		w.cl, w.p = nil, nil
	}
}

// produceSome produces the records of rs that are not nil, and returns the
// outcomes of all of rs (nil for a nil record).
func produceSome(ctx context.Context, p *produce.Producer, rs []*kgo.Record) []error {
	if !slices.Contains(rs, nil) {
		return p.ProduceAll(ctx, rs)
	}
	some := make([]*kgo.Record, 0, len(rs))
	for _, r := range rs {
		if r != nil {
			some = append(some, r)
		}
	}
	outcomes := make([]error, len(rs))
	got := p.ProduceAll(ctx, some)
	j := 0
	for i, r := range rs {
		if r != nil {
			outcomes[i] = got[j]
			j++
		}
	}
	return outcomes
}
