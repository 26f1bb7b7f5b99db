package plugin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/share"
)

func init() {
	if err := service.RegisterBatchInput(ShareInputName, ShareConfigSpec(), newShareInputFromConfig); err != nil {
		panic(err)
	}
}

func newShareInputFromConfig(pc *service.ParsedConfig, res *service.Resources) (service.BatchInput, error) {
	conf, err := parseShareConfig(pc)
	if err != nil {
		return nil, err
	}
	return newShareInput(conf, res), nil
}

// ShareInput is the kafka_share batch input. Benthos calls Connect, then
// ReadBatch from one goroutine, acks from any goroutine, and Close once; all
// of these are safe for concurrent use with each other.
//
// One Connect makes a shareConn: the members (kgo clients in the share
// group), the gate that says which member may poll (internal/share), one
// poller goroutine per member and the renewal loop. The life of a record: a
// poller takes an idle member from the gate, polls it, holds the poll in
// the gate and hands its batches, one by one, to ReadBatch; the ack
// function gives each record its verdict (share_verdict.go); when the
// poll's last record has one, the gate frees the member for the next
// poller. Meanwhile renewLoop renews the locks of held records, those
// waiting to be handed out included, and Close releases whatever is still
// held.
//
// Goroutines: Benthos's reader (ReadBatch), its ack goroutines (the ack
// functions), the pollers (poll), the renewal loop (renewLoop) and kgo's
// own (onAckResults). The pollers poll whichever member is idle, so that
// all idle members fetch at once: a member with nothing to fetch never
// keeps another's records waiting. Up to members polls are acquired at
// once whether or not the pipeline asked for them yet (a prefetch, as
// kafka_watermark's fetching ahead), renewed while they wait.
type ShareInput struct {
	conf *shareConfig
	log  *service.Logger
	m    *shareMetrics

	mu        sync.Mutex // guards conn and connFails across Connect, ReadBatch and Close
	conn      *shareConn // nil before Connect and after Close
	connFails int
	closed    atomic.Bool
}

func newShareInput(conf *shareConfig, res *service.Resources) *ShareInput {
	return &ShareInput{conf: conf, log: res.Logger(), m: newShareMetrics(res.Metrics())}
}

// shareConn is what one Connect made; Close ends it. Its fields are set
// before it is published and not written after.
type shareConn struct {
	in          *ShareInput
	members     []*kgo.Client
	gate        *share.Gate
	dlw         *deadLetterWriter // nil without dead_letter.topic
	limits      share.Limits
	maxAttempts int32
	renewEvery  time.Duration
	memberName  string // the dead letters' provenance: client ID @ host

	// ctx ends with Close: it stops polls and dead-letter retries.
	ctx    context.Context
	cancel context.CancelFunc
	// renewCtx ends later in Close, once what was held is released: it
	// stops the renewal loop.
	renewCtx  context.Context
	stopRenew context.CancelFunc
	// out hands batches from the pollers to ReadBatch; unbuffered, so a
	// batch is either with a poller (held, renewed) or handed out.
	out chan *shareBatch
	// pollers counts the pollers, renewer the renewal loop; Close waits
	// for each, so that no poll is held after it released what was held.
	pollers, renewer sync.WaitGroup
}

// shareBatch is records of one poll handed out together.
type shareBatch struct {
	poll    *share.Poll
	first   int // the poll's index of records[0]
	records []*kgo.Record
	acked   atomic.Bool // the ack function ran: later calls are duplicates
}

// Connect prepares the group (start_offset, its limits), then makes the
// members and starts the renewal loop.
func (in *ShareInput) Connect(ctx context.Context) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed.Load() {
		return service.ErrEndOfInput
	}
	if in.conn != nil {
		return nil
	}
	c, err := in.connect(ctx)
	if err != nil {
		in.connFails++
		wait := connectBackoff(in.connFails)
		return service.NewErrBackOff(fmt.Errorf("kafka_share: %w; trying again in %v", err, wait), wait)
	}
	in.connFails = 0
	in.conn = c
	c.start()
	in.log.Infof("kafka_share: consuming %v as share group %q with %d members (max_attempts %d, group delivery limit %d, lock %v, renewing every %v)",
		in.conf.topics, in.conf.group, len(c.members), c.maxAttempts, c.limits.DeliveryLimit, c.limits.LockDuration, c.renewEvery)
	return nil
}

func (in *ShareInput) connect(ctx context.Context) (*shareConn, error) {
	conf := in.conf
	admin, err := kgo.NewClient(conf.conn.Opts()...)
	if err != nil {
		return nil, fmt.Errorf("invalid client options: %w", err)
	}
	defer admin.Close()
	if err := admin.Ping(ctx); err != nil {
		return nil, fmt.Errorf("cannot reach seed brokers %s%s: %w", strings.Join(conf.conn.SeedBrokers, ","), authDescription(conf.conn), err)
	}
	limits, err := setupShareGroup(ctx, admin, conf)
	if err != nil {
		return nil, err
	}
	maxAttempts, err := maxAttemptsFor(conf, limits)
	if err != nil {
		return nil, err
	}
	c := &shareConn{
		in:          in,
		gate:        share.NewGate(conf.members),
		limits:      limits,
		maxAttempts: maxAttempts,
		renewEvery:  share.RenewEvery(limits.LockDuration, conf.conn.ConnIdleTimeout),
		memberName:  shareMemberName(conf.conn.ClientID),
		out:         make(chan *shareBatch),
	}
	if conf.deadLetter != nil {
		dlw, err := newShareDeadLetterWriter(conf)
		if err != nil {
			return nil, err
		}
		c.dlw = dlw
	}
	for i := range conf.members {
		cl, err := kgo.NewClient(c.memberOpts(i)...)
		if err != nil {
			c.closeClients()
			return nil, fmt.Errorf("invalid share group client options: %w", err)
		}
		c.members = append(c.members, cl)
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.renewCtx, c.stopRenew = context.WithCancel(context.Background())
	return c, nil
}

// memberOpts are member i's kgo options. ShareMaxRecordsStrict caps a
// fetch at batch_max_records records and turns fetching ahead off
// (MaxConcurrentFetches 0: kgo config.go:2039-2051, 1660-1665): a member
// acquires records only while it is polled, so none wait in kgo's buffer,
// unrenewable, their lock running, while the member's last poll is out.
func (c *shareConn) memberOpts(i int) []kgo.Opt {
	conf := c.in.conf
	opts := conf.conn.Opts()
	opts = append(opts,
		kgo.ShareGroup(conf.group),
		kgo.ConsumeTopics(conf.topics...),
		kgo.ShareMaxRecords(int32(conf.batchMaxRecords)),
		kgo.ShareMaxRecordsStrict(),
		kgo.MaxConcurrentFetches(0),
		kgo.ShareAckCallback(c.onAckResults),
	)
	if conf.rackID != "" {
		opts = append(opts, kgo.Rack(conf.rackID))
	}
	if conf.testMemberOpts != nil {
		opts = append(opts, conf.testMemberOpts(i)...)
	}
	return opts
}

// onAckResults is every member's kgo.ShareAckCallback: it counts the
// partitions whose verdicts or renewals the broker refused. Called from
// kgo's callback goroutine; it must not call FlushAcks.
func (c *shareConn) onAckResults(_ *kgo.Client, rs kgo.ShareAckResults) {
	for _, r := range rs {
		switch c.in.m.ackResult(r) {
		case share.AckLockLost:
			c.in.log.Warnf("kafka_share: the broker no longer held records of %s/%d for this member (lock expired or session ended; they may be delivered again, a duplicate): %v", r.Topic, r.Partition, r.Err)
		case share.AckFailed:
			c.in.log.Warnf("kafka_share: acknowledging records of %s/%d failed; they are delivered again after their lock: %v", r.Topic, r.Partition, r.Err)
		}
	}
}

// ReadBatch returns the next batch a poller polled.
func (in *ShareInput) ReadBatch(ctx context.Context) (service.MessageBatch, service.AckFunc, error) {
	in.mu.Lock()
	c := in.conn
	in.mu.Unlock()
	if c == nil {
		return nil, nil, in.stoppedErr()
	}
	select {
	case b := <-c.out:
		msgs, ack := c.handOut(b)
		return msgs, ack, nil
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	case <-c.ctx.Done():
		return nil, nil, in.stoppedErr()
	}
}

func (in *ShareInput) stoppedErr() error {
	if in.closed.Load() {
		return service.ErrEndOfInput
	}
	return service.ErrNotConnected
}

// start starts a poller per member and the renewal loop.
func (c *shareConn) start() {
	for range c.members {
		c.pollers.Go(c.poll)
	}
	c.renewer.Go(c.renewLoop)
}

// poll is a poller: until Close, it takes an idle member from the gate
// (waiting for one), polls it, holds the poll in the gate and hands its
// batches to ReadBatch.
func (c *shareConn) poll() {
	for {
		m, err := c.gate.Acquire(c.ctx)
		if err != nil {
			return
		}
		// All that is buffered, not PollRecords(n): what stayed in kgo's
		// buffer would be acquired and unrenewable until this member's
		// next poll.
		fetches := c.members[m].PollFetches(c.ctx)
		var recs []*kgo.Record
		fetches.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
		failed := false
		fetches.EachError(func(topic string, p int32, err error) {
			if errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrClientClosed) {
				return
			}
			c.in.log.Warnf("kafka_share: fetching %s/%d: %v", topic, p, err)
			failed = true
		})
		if len(recs) == 0 {
			c.gate.Idle(m)
			if failed { // do not spin on a lasting error
				select {
				case <-time.After(time.Second):
				case <-c.ctx.Done():
				}
			}
			continue
		}
		for _, b := range c.hold(m, recs) {
			select {
			case c.out <- b:
			case <-c.ctx.Done():
				return // Close releases the rest (releaseHeld)
			}
		}
	}
}

// hold holds the poll recs of member m in the gate and cuts it into
// batches. The poll's locks count from the earliest acquisition deadline
// less the lock, so that a record kgo fetched before this poll is renewed
// in time.
func (c *shareConn) hold(m int, recs []*kgo.Record) []*shareBatch {
	now := time.Now()
	taken := now
	ackers := make([]share.Acker, len(recs))
	sizes := make([]int64, len(recs))
	for i, r := range recs {
		ackers[i] = r
		sizes[i] = recordBytes(r)
		if d := r.AcquisitionDeadline(); !d.IsZero() && d.Add(-c.limits.LockDuration).Before(taken) {
			taken = d.Add(-c.limits.LockDuration)
		}
	}
	p := c.gate.Hold(m, ackers, taken)
	c.in.m.polled(len(recs))
	var out []*shareBatch
	start := 0
	for _, end := range share.Cut(sizes, c.in.conf.batchMaxRecords, c.in.conf.batchMaxBytes) {
		out = append(out, &shareBatch{poll: p, first: start, records: recs[start:end:end]})
		start = end
	}
	return out
}

// recordBytes is a record's key, value and header bytes, as batch_max_bytes
// counts them.
func recordBytes(r *kgo.Record) int64 {
	n := int64(len(r.Key) + len(r.Value))
	for _, h := range r.Headers {
		n += int64(len(h.Key) + len(h.Value))
	}
	return n
}

// renewLoop renews the locks of held records every renewEvery, checking
// four times as often, and asks each member that renewed to send its
// renewals now rather than at kgo's next ack tick (up to a second later:
// consumer_share.go:1455-1466 in kgo).
func (c *shareConn) renewLoop() {
	t := time.NewTicker(max(c.renewEvery/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-c.renewCtx.Done():
			return
		case now := <-t.C:
			renewed := map[int]bool{}
			for _, p := range c.gate.Held() {
				if n := p.Renew(now, c.renewEvery); n > 0 {
					c.in.m.renewed(n)
					renewed[p.Member()] = true
				}
			}
			for m := range renewed {
				signalFlush(c.members[m])
			}
			c.in.m.syncGauge()
		}
	}
}

// signalFlush makes cl send its pending acknowledgements now, without
// waiting for them: FlushAcks signals every source first and only then
// waits, until its context is done (consumer_share.go:548-583 in kgo), and
// this context is done already.
func signalFlush(cl *kgo.Client) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = cl.FlushAcks(ctx)
}

// Close stops polling, releases every record still held (the broker
// delivers them again, maybe to another member), flushes the verdicts and
// leaves the group.
//
// The members that hold no poll leave first, and only then is what the
// others hold released: a member that was being polled may still have a
// share fetch waiting at the broker (up to kgo's FetchMaxWait, 500 ms for
// share groups), and a release would wake it. It would acquire the released
// record, one delivery more, into a client buffer that nobody polls again,
// and release it again as it left (kgo's closeShareSession): the record
// came back an attempt later, and one held at its last attempt but one was
// archived by the broker with nothing said (TestShareAcceptedBeforeCloseStays
// saw the attempt count jump by two, on kfake, before this order). A member
// that holds a poll fetches nothing: it is polled only once its records
// are settled. The locks of what is held are renewed until it is released.
func (in *ShareInput) Close(ctx context.Context) error {
	in.mu.Lock()
	in.closed.Store(true)
	c := in.conn
	in.conn = nil
	in.mu.Unlock()
	if c == nil {
		return nil
	}
	c.cancel()
	c.pollers.Wait()
	// Benthos closes inputs with a context that has no deadline: bound the
	// flush so that an unreachable broker cannot hang the shutdown.
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	holding := make([]bool, len(c.members))
	for _, p := range c.gate.Held() {
		holding[p.Member()] = true
	}
	errs := c.closeMembers(ctx, func(m int) bool { return !holding[m] })
	c.releaseHeld()
	c.stopRenew()
	c.renewer.Wait()
	errs = append(errs, c.closeMembers(ctx, func(m int) bool { return holding[m] })...)
	c.dlw.close()
	c.in.m.syncGauge()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("kafka_share: flushing verdicts at close: %w", err)
	}
	return nil
}

// closeMembers flushes the verdicts of the members which picks, then closes
// them (kgo's Close leaves the group), all at once, and returns the
// flushes' errors.
func (c *shareConn) closeMembers(ctx context.Context, which func(m int) bool) []error {
	var wg sync.WaitGroup
	errs := make([]error, len(c.members))
	for i, cl := range c.members {
		if !which(i) {
			continue
		}
		wg.Go(func() {
			errs[i] = cl.FlushAcks(ctx)
			cl.Close()
		})
	}
	wg.Wait()
	return errs
}

// releaseHeld releases every record still held, counting each, and logs
// at ERROR those released at the group's delivery limit: the broker
// archives them (share.Decide says why), which nothing but a close does.
func (c *shareConn) releaseHeld() {
	var archived []string
	n := 0
	for _, p := range c.gate.Held() {
		for _, i := range p.ReleaseHeld() {
			n++
			c.in.m.verdict(share.Released)
			if r, ok := p.Acker(i).(*kgo.Record); ok && r.DeliveryCount() >= c.limits.DeliveryLimit {
				archived = append(archived, fmt.Sprintf("%s/%d@%d", r.Topic, r.Partition, r.Offset))
			}
		}
	}
	if n > 0 {
		c.in.log.Infof("kafka_share: released %d records held at close; the broker delivers them again", n)
	}
	if len(archived) > 0 {
		c.in.log.Errorf("kafka_share: released %d records at close that were at the group's delivery limit (%d); the broker archives them without another delivery: %s",
			len(archived), c.limits.DeliveryLimit, strings.Join(archived, ", "))
	}
}

// closeClients closes the members made so far, for a failed Connect.
func (c *shareConn) closeClients() {
	for _, cl := range c.members {
		cl.Close()
	}
	c.dlw.close()
}
