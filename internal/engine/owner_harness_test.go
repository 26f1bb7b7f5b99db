package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/memmetrics"
)

// The owner's unit tests run the owner and committer goroutines alone, in a
// synctest bubble, against fakeClient: no broker, no poller, no Benthos
// stream. Time is the bubble's fake clock, so drain timeouts, retry backoffs
// and gauge clocks are exact and instant.

// fakeClient is a groupClient that records what the owner asks of it. Safe
// for concurrent use.
type fakeClient struct {
	mu      sync.Mutex
	paused  map[topicPartition]bool
	commits []fakeCommit
	// block, when set, holds every commit until it is closed; with
	// blockAsync, only the periodic (not sync) ones.
	block      chan struct{}
	blockAsync bool
	// codes answers a partition's commit with an error code.
	codes       map[topicPartition]int16
	ends        kadm.ListedOffsets
	endsQueries int
	starts      kadm.ListedOffsets
	// retention is each topic's retention.ms as DescribeRetention
	// answers it; retentionErr refuses the description.
	retention    map[string]int64
	retentionErr error
	// onCommit, when set, sees every partition commit the broker accepts,
	// under the client's lock.
	onCommit func(tp topicPartition, eo kgo.EpochOffset, meta string)
	// metaLimit, when set, refuses longer metadata as a broker with a
	// smaller offset.metadata.max.bytes does.
	metaLimit int
	rewinds   []map[string]map[int32]kgo.EpochOffset // SetOffsets calls
}

type fakeCommit struct {
	offsets epochOffsets
	meta    map[topicPartition]string
	sync    bool
}

func newFakeClient() *fakeClient {
	return &fakeClient{paused: map[topicPartition]bool{}, codes: map[topicPartition]int16{}}
}

func (f *fakeClient) PauseFetchPartitions(m map[string][]int32) map[string][]int32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, tp := range flatten(m) {
		f.paused[tp] = true
	}
	return nil
}

func (f *fakeClient) ResumeFetchPartitions(m map[string][]int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, tp := range flatten(m) {
		delete(f.paused, tp)
	}
}

func (f *fakeClient) isPaused(tp topicPartition) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.paused[tp]
}

func (f *fakeClient) SetOffsets(m map[string]map[int32]kgo.EpochOffset) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rewinds = append(f.rewinds, m)
}

func (f *fakeClient) Commit(ctx context.Context, set commitSet, sync bool) commitResult {
	f.mu.Lock()
	block := f.block
	if f.blockAsync && sync {
		block = nil
	}
	f.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return commitResult{err: ctx.Err()}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.commits = append(f.commits, fakeCommit{offsets: set.offsets, meta: set.meta, sync: sync})
	res := commitResult{errs: map[topicPartition]error{}}
	eachResult(set.offsets, nil, nil, func(tp topicPartition, eo kgo.EpochOffset, _ error) {
		if f.metaLimit > 0 && len(set.meta[tp]) > f.metaLimit {
			res.errs[tp] = kerr.OffsetMetadataTooLarge
			return
		}
		if code := f.codes[tp]; code != 0 {
			res.errs[tp] = kerr.ErrorForCode(code)
			return
		}
		if f.onCommit != nil {
			f.onCommit(tp, eo, set.meta[tp])
		}
	})
	return res
}

func (f *fakeClient) ListEndOffsets(context.Context, ...string) (kadm.ListedOffsets, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.endsQueries++
	return f.ends, nil
}

func (f *fakeClient) DescribeRetention(_ context.Context, topics ...string) (map[string]int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.retentionErr != nil {
		return nil, f.retentionErr
	}
	out := map[string]int64{}
	for _, t := range topics {
		if ms, ok := f.retention[t]; ok {
			out[t] = ms
		}
	}
	return out, nil
}

func (f *fakeClient) ListStartOffsets(context.Context, ...string) (kadm.ListedOffsets, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.starts, nil
}

// committed returns every offset committed for tp, in order.
func (f *fakeClient) committed(tp topicPartition) []kgo.EpochOffset {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []kgo.EpochOffset
	for _, c := range f.commits {
		if eo, ok := c.offsets[tp.topic][tp.partition]; ok {
			out = append(out, eo)
		}
	}
	return out
}

// testMetrics returns the input's metrics, reporting to a gauge store. Call
// it outside a synctest bubble: Benthos resources are built there.
func testMetrics(t *testing.T) (*Metrics, *memmetrics.Store) {
	t.Helper()
	res, g, closeRes, err := memmetrics.Resources()
	require.NoError(t, err)
	t.Cleanup(func() { _ = closeRes(context.Background()) })
	return NewMetrics(res.Metrics()), g
}

// ownerHarness drives one owner by hand, inside a synctest bubble.
type ownerHarness struct {
	t     *testing.T
	o     *owner
	cl    *fakeClient
	polls uint64 // the number of the last poll handed to the owner
}

// startOwner starts an owner and its committer in the calling bubble; they
// stop at the test's cleanup.
func startOwner(t *testing.T, conf *Config, m *Metrics) *ownerHarness {
	o := newOwner(conf, service.MockResources().Logger(), m)
	cl := newFakeClient()
	o.cl = cl
	go o.run()
	go o.committer()
	t.Cleanup(func() {
		o.sig.TriggerHardStop()
		o.stopIO()
		<-o.stopped()
	})
	return &ownerHarness{t: t, o: o, cl: cl}
}

func (h *ownerHarness) assign(tps ...topicPartition) {
	r := assignReq{tps: tps, done: make(chan struct{})}
	h.o.inbox.assignCh <- r
	<-r.done
}

// fetch hands the owner one poll's records of tp, with the log end hwm.
func (h *ownerHarness) fetch(tp topicPartition, hwm int64, recs ...*kgo.Record) {
	f := kgo.Fetch{Topics: []kgo.FetchTopic{{Topic: tp.topic, Partitions: []kgo.FetchPartition{{Partition: tp.partition, HighWatermark: hwm, Records: recs}}}}}
	h.polls++
	r := pollResult{seq: h.polls, fetches: kgo.Fetches{f}, done: make(chan struct{})}
	h.o.inbox.pollCh <- r
	<-r.done
}

// records returns records of tp at offsets [from, to) with leader epoch 0.
func records(tp topicPartition, from, to int64) []*kgo.Record {
	var out []*kgo.Record
	for off := from; off < to; off++ {
		out = append(out, &kgo.Record{Topic: tp.topic, Partition: tp.partition, Offset: off, Value: []byte(fmt.Sprint(off))})
	}
	return out
}

// tryRead asks for a batch and, if the owner has none once the bubble is
// idle, withdraws the request.
func (h *ownerHarness) tryRead() (*Batch, bool) {
	r := &readReq{reply: make(chan *Batch, 1)}
	h.o.inbox.readCh <- r
	synctest.Wait()
	select {
	case b := <-r.reply:
		return b, b != nil
	default:
		h.o.inbox.withdrawCh <- withdrawReq{req: r}
		return nil, false
	}
}

// read asks for a batch and fails the test if there is none.
func (h *ownerHarness) read() *Batch {
	h.t.Helper()
	b, ok := h.tryRead()
	require.True(h.t, ok, "a batch to read")
	return b
}

// ack sends a verdict and waits until the bubble is idle.
func (h *ownerHarness) ack(b *Batch, err error) {
	h.o.inbox.ackCh <- ackMsg{b: b, err: err}
	synctest.Wait()
}

// revoke starts a revoke of tps and returns the channel its final offsets
// arrive on.
func (h *ownerHarness) revoke(tps ...topicPartition) chan commitSet {
	r := revokeReq{tps: tps, reply: make(chan commitSet, 1)}
	h.o.inbox.revokeCh <- r
	synctest.Wait()
	return r.reply
}

// state runs fn on the owner's state while the bubble is idle: every
// goroutine of the bubble is blocked, so nothing races with it. Then it
// hands the owner a no-op (the withdrawal of a read it never saw), so that
// what the owner does next, on a timer too, happens after fn's reads for the
// race detector: the bubble's clock moving on orders nothing.
func (h *ownerHarness) state(fn func(o *owner)) {
	synctest.Wait()
	fn(h.o)
	h.o.inbox.withdrawCh <- withdrawReq{req: &readReq{reply: make(chan *Batch, 1)}}
}

// fetched hands the owner the group's committed offsets and metadata, as
// kgo's OnOffsetsFetched does after an assignment.
func (h *ownerHarness) fetched(commits map[topicPartition]fetchedCommit) {
	r := fetchedReq{commits: commits, done: make(chan struct{})}
	h.o.inbox.fetchedCh <- r
	<-r.done
}

// readAll reads every batch the owner can hand out now.
func (h *ownerHarness) readAll() []*Batch {
	var out []*Batch
	for {
		b, ok := h.tryRead()
		if !ok {
			return out
		}
		out = append(out, b)
	}
}

// unresolved and retrying are p's ledger counts.
func unresolved(p *partState) int { u, _ := p.led.counts(); return u }
func retrying(p *partState) int   { _, r := p.led.counts(); return r }

// counts returns the unresolved and retrying counts (see ledger).
func (l *ledger) counts() (unresolved, retrying int) { return l.unresolved, l.retrying }
