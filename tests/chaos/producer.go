package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// prodRec is one record a producer saw acknowledged.
type prodRec struct {
	p    int32
	o    int64
	hash uint32
}

const pad = "................................"

// liveProducer writes non-transactional records throughout the run, round
// robin over the partitions, at a steady rate.
type liveProducer struct {
	cl    *kgo.Client
	topic string
	parts int
	rate  int
	logf  func(string, ...any)
	// keys keys the records (nil: null keys); set before start.
	keys *keySpace

	acked  atomic.Int64
	failed atomic.Int64
	mu     sync.Mutex
	recs   []prodRec
	errs   map[string]int
	stop   chan struct{}
	done   chan struct{}
}

func newLiveProducer(brokers, topic string, parts, rate int, logf func(string, ...any)) (*liveProducer, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(seedList(brokers)...),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(10*time.Millisecond),
		kgo.MaxBufferedRecords(20000),
		kgo.RecordDeliveryTimeout(5*time.Minute),
		kgo.ClientID("chaos-live-producer"),
	)
	if err != nil {
		return nil, err
	}
	return &liveProducer{cl: cl, topic: topic, parts: parts, rate: rate, logf: logf, errs: map[string]int{},
		stop: make(chan struct{}), done: make(chan struct{})}, nil
}

func (lp *liveProducer) start(ctx context.Context) {
	go func() {
		defer close(lp.done)
		const tick = 50 * time.Millisecond
		t := time.NewTicker(tick)
		defer t.Stop()
		var seq int64
		var owed float64
		for {
			select {
			case <-lp.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			owed += float64(lp.rate) * tick.Seconds()
			for ; owed >= 1; owed-- {
				p := int32(seq % int64(lp.parts))
				v := fmt.Sprintf("L%09d-p%02d-%s", seq, p, pad)
				key := lp.keys.key(seq)
				seq++
				h := testkit.HashValue(v)
				lp.cl.Produce(ctx, &kgo.Record{Partition: p, Key: key, Value: []byte(v)}, func(r *kgo.Record, err error) {
					if err != nil {
						lp.failed.Add(1)
						lp.mu.Lock()
						lp.errs[shortErr(err)]++
						lp.mu.Unlock()
						return
					}
					lp.acked.Add(1)
					lp.mu.Lock()
					lp.recs = append(lp.recs, prodRec{p: r.Partition, o: r.Offset, hash: h})
					lp.mu.Unlock()
				})
			}
		}
	}()
}

// finish stops producing and waits for every buffered record's outcome.
func (lp *liveProducer) finish(ctx context.Context) {
	close(lp.stop)
	<-lp.done
	fctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := lp.cl.Flush(fctx); err != nil {
		lp.logf("live producer: flush: %v", err)
	}
	lp.cl.Close()
}

// txnRec is one record of a transaction that ended without error, and how.
type txnRec struct {
	prodRec
	state byte // 'c' committed, 'a' aborted
	// began and ended bound the transaction (Unix ns): one that overlapped
	// a broker outage may end, in the log, other than kgo said
	// (drain.go, crossCheckProducers).
	began, ended int64
}

// txnProducer writes transactions of a few records to random partitions,
// aborting about abortRatio of them: the aborted records and the markers are
// offsets a read_committed consumer never delivers.
type txnProducer struct {
	brokers    string
	topic      string
	parts      int
	rate       int
	abortRatio float64
	rng        *rand.Rand
	id         string
	logf       func(string, ...any)
	// keys keys the records (nil: null keys); set before start. It draws
	// nothing from rng.
	keys *keySpace

	cl *kgo.Client
	// gate is held for each transaction, and by pause: while paused no
	// transaction is open (the unclean-election fault needs no marker
	// inside the log it truncates).
	gate sync.Mutex

	mu        sync.Mutex
	recs      []txnRec
	committed int // transactions
	aborted   int
	failed    int
	unknown   int // records of failed transactions: committed or not, the log tells
	errs      map[string]int
	stop      chan struct{}
	done      chan struct{}
}

func newTxnProducer(brokers, topic string, parts, rate int, abortRatio float64, seed uint64, id string, logf func(string, ...any)) *txnProducer {
	return &txnProducer{brokers: brokers, topic: topic, parts: parts, rate: rate, abortRatio: abortRatio,
		rng: rand.New(rand.NewPCG(seed, 0x7478)), id: id, logf: logf, errs: map[string]int{},
		stop: make(chan struct{}), done: make(chan struct{})}
}

func (tp *txnProducer) client() (*kgo.Client, error) {
	return kgo.NewClient(
		kgo.SeedBrokers(seedList(tp.brokers)...),
		kgo.DefaultProduceTopic(tp.topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionalID(tp.id),
		kgo.TransactionTimeout(30*time.Second),
		kgo.RecordDeliveryTimeout(2*time.Minute),
		kgo.ClientID("chaos-txn-producer"),
	)
}

func (tp *txnProducer) noteErr(err error) {
	tp.mu.Lock()
	tp.errs[shortErr(err)]++
	tp.mu.Unlock()
}

func (tp *txnProducer) start(ctx context.Context) {
	go func() {
		defer close(tp.done)
		defer func() {
			if tp.cl != nil {
				tp.cl.Close()
			}
		}()
		var seq int64
		for {
			select {
			case <-tp.stop:
				return
			case <-ctx.Done():
				return
			default:
			}
			tp.gate.Lock()
			if tp.cl == nil {
				cl, err := tp.client()
				if err != nil {
					tp.gate.Unlock()
					tp.noteErr(err)
					_ = sleepCtx(ctx, time.Second)
					continue
				}
				tp.cl = cl
			}
			n := 5 + tp.rng.IntN(30)
			commit := tp.rng.Float64() >= tp.abortRatio
			recs := make([]*kgo.Record, n)
			hashes := make([]uint32, n)
			for i := range recs {
				p := int32(tp.rng.IntN(tp.parts))
				v := fmt.Sprintf("T%09d-p%02d-%s", seq, p, pad)
				recs[i] = &kgo.Record{Partition: p, Key: tp.keys.key(seq), Value: []byte(v)}
				seq++
				hashes[i] = testkit.HashValue(v)
			}
			began := time.Now()
			tp.transact(ctx, recs, hashes, commit)
			tp.gate.Unlock()
			if tp.rate > 0 {
				_ = sleepCtx(ctx, time.Duration(float64(n)/float64(tp.rate)*float64(time.Second))-time.Since(began))
			}
		}
	}()
}

// transact runs one transaction; any error ends in a new client (whose
// InitProducerID fences the old one and aborts what it left open), and
// the records of that transaction are of unknown fate.
func (tp *txnProducer) transact(ctx context.Context, recs []*kgo.Record, hashes []uint32, commit bool) {
	tctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	began := time.Now().UnixNano()
	fail := func(err error, what string) {
		tp.noteErr(fmt.Errorf("%s: %w", what, err))
		tp.mu.Lock()
		tp.failed++
		tp.unknown += len(recs)
		tp.mu.Unlock()
		tp.cl.Close()
		tp.cl = nil
	}
	if err := tp.cl.BeginTransaction(); err != nil {
		fail(err, "begin")
		return
	}
	if err := tp.cl.ProduceSync(tctx, recs...).FirstErr(); err != nil {
		fail(err, "produce")
		return
	}
	if err := tp.cl.EndTransaction(tctx, kgo.TransactionEndTry(commit)); err != nil {
		fail(err, "end")
		return
	}
	ended := time.Now().UnixNano()
	state := byte('a')
	if commit {
		state = 'c'
	}
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if commit {
		tp.committed++
	} else {
		tp.aborted++
	}
	for i, r := range recs {
		tp.recs = append(tp.recs, txnRec{prodRec{p: r.Partition, o: r.Offset, hash: hashes[i]}, state, began, ended})
	}
}

// pause waits for the transaction in progress to end and holds the next
// one back until resume.
func (tp *txnProducer) pause() { tp.gate.Lock() }

func (tp *txnProducer) resume() { tp.gate.Unlock() }

func (tp *txnProducer) finish() {
	close(tp.stop)
	<-tp.done
}

// shortErr is an error's first line, cut to a length fit for a table.
func shortErr(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 120 {
		s = s[:120]
	}
	return s
}
