package plugin

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/engine"
	"github.com/watermark-connect/watermark-connect/internal/errclass"
	"github.com/watermark-connect/watermark-connect/internal/kafkamsg"
	"github.com/watermark-connect/watermark-connect/internal/produce"
	"github.com/watermark-connect/watermark-connect/internal/share"
)

// MetaShareGroup is the metadata key of the share group a message was
// consumed in.
const MetaShareGroup = "kafka_share_group"

// handOut converts a batch to messages with kafka_watermark's metadata but
// kafka_lag, plus kafka_share_group and, from the second delivery on,
// kafka_delivery_attempt, and makes its ack function.
//
// A first delivery's message carries eight keys, as kafka_watermark's:
// kafka_lag, which would always be 0 (a share fetch reports no log end),
// gives its place to kafka_share_group, and kafka_delivery_attempt is absent
// on a first delivery (absent means 1), as kafka_watermark sets it. A ninth
// key turns every message's metadata map from Go's small map into a table
// (plugin/input.go's handOut measured it); with ten keys on every message
// this input took 7.6 µs of CPU per record, and docs/BENCHMARKS.md (part 9)
// gives what eight take.
//
// Every batch is indexed: its verdicts are per message whenever the
// pipeline fails part of it (a *service.BatchError).
func (c *shareConn) handOut(b *shareBatch) (service.MessageBatch, service.AckFunc) {
	msgs := kafkamsg.RecordsToBatch(b.records, kafkamsg.NoLag)
	var group any = c.in.conf.group
	for i, m := range msgs {
		m.MetaSetMut(MetaShareGroup, group)
		if n := b.records[i].DeliveryCount(); n > 1 {
			m.MetaSetMut(kafkamsg.MetaDeliveryAttempt, int(n))
		}
	}
	index := msgs.Index()
	return msgs, func(_ context.Context, err error) error {
		c.settle(b, err, index)
		return nil
	}
}

// settle gives every record of b its verdict for the pipeline's result err
// (share.Decide): accepted when the pipeline took it, else released,
// dead-lettered or rejected by its attempt. Only the first call for b
// counts: a later one is a duplicate ack, and the poll refuses a second
// verdict for a record anyway (Poll.Settle).
func (c *shareConn) settle(b *shareBatch, err error, index *service.Indexer) {
	if !b.acked.CompareAndSwap(false, true) {
		return
	}
	var failed []int // indices into b.records; nil with err set: all of them
	if err != nil {
		failed = failedRecords(err, index, nil)
	}
	var n verdictCounts
	var rejected []*kgo.Record
	var letters, accepted, released []int
	for i, r := range b.records {
		if err == nil || (failed != nil && !slices.Contains(failed, i)) {
			accepted = append(accepted, i)
			continue
		}
		switch v := share.Decide(r.DeliveryCount(), c.maxAttempts, c.dlw != nil); v {
		case share.DeadLettered:
			if b.poll.Claim(b.first + i) {
				letters = append(letters, i)
			}
		case share.Rejected:
			if c.give(b, i, v, &n) {
				rejected = append(rejected, r)
			}
		default:
			released = append(released, i)
		}
	}
	c.release(b, released, &n)
	for _, i := range accepted {
		c.give(b, i, share.Accepted, &n)
	}
	c.in.m.verdicts(&n)
	if len(rejected) > 0 {
		c.in.log.Errorf("kafka_share: rejected %d records that failed at their last attempt (max_attempts %d) with no dead-letter topic; the broker archives them: %s: %s",
			len(rejected), c.maxAttempts, recordList(rejected), errclass.Class(err))
	}
	if len(letters) > 0 {
		c.deadLetter(b, letters, err)
	}
}

// flushReleasesTimeout bounds release's wait for releases to reach the
// broker.
const flushReleasesTimeout = 5 * time.Second

// release releases the records of b at idx, and sends the releases to the
// broker before it counts them settled, rather than with the member's next
// fetch: a fetch that carries a release acquires the released records
// again for the same member, while a release sent alone frees them for
// whichever member asks first (a member waiting in a fetch is woken). So
// the verdicts go to kgo first (Record.Ack; Poll.Settle's second Ack of
// the same verdict is a no-op in kgo), then FlushAcks, and only then
// Poll.Settle, which may free the member for its next poll. It waits one
// round trip, on failures only, for at most flushReleasesTimeout; a flush
// that fails leaves the releases to the next fetch. On kfake, `demo
// --share` (seeds 7-14) redelivered 0 of 48 released records to another
// member without this, 15 with it; TestShareReleaseGoesToAWaitingMember.
func (c *shareConn) release(b *shareBatch, idx []int, n *verdictCounts) {
	if len(idx) == 0 {
		return
	}
	for _, i := range idx {
		b.records[i].Ack(kgo.AckRelease)
	}
	ctx, cancel := context.WithTimeout(c.ctx, flushReleasesTimeout)
	_ = c.members[b.poll.Member()].FlushAcks(ctx)
	cancel()
	for _, i := range idx {
		c.give(b, i, share.Released, n)
	}
}

// give gives record i of b the verdict v and counts it in n, for the
// caller to pass to shareMetrics.verdicts; false when the record had one
// already.
func (c *shareConn) give(b *shareBatch, i int, v share.Verdict, n *verdictCounts) bool {
	if !b.poll.Settle(b.first+i, v) {
		return false
	}
	n[v]++
	return true
}

// deadLetter writes the records of b at idx (claimed: Poll.Claim) to the
// dead-letter topic, one letter per delivery count, trying again with
// backoff until the broker acknowledges each, then accepts them. Their
// locks are renewed meanwhile (a claimed record is held). It gives up only
// when the input closes, which releases them (releaseHeld).
func (c *shareConn) deadLetter(b *shareBatch, idx []int, cause error) {
	byAttempt := map[int32][]int{}
	for _, i := range idx {
		n := b.records[i].DeliveryCount()
		byAttempt[n] = append(byAttempt[n], i)
	}
	now := time.Now()
	for attempts, group := range byAttempt {
		var n verdictCounts
		l := &engine.Letter{Attempts: int(attempts), Error: errclass.Class(cause), FirstFailed: now, Member: c.memberName}
		for _, i := range group {
			l.Records = append(l.Records, b.records[i])
		}
		wait := 100 * time.Millisecond
		for {
			dest, err := c.dlw.Write(c.ctx, l)
			if err == nil {
				for _, i := range group {
					c.give(b, i, share.DeadLettered, &n)
				}
				c.in.m.verdicts(&n)
				c.in.log.Warnf("kafka_share: dead-lettered %d records to %s after %d attempts: %s", len(group), dest, attempts, recordList(l.Records))
				break
			}
			if c.ctx.Err() != nil {
				c.in.log.Errorf("kafka_share: dead-letter write of %s abandoned at close (released): %v", recordList(l.Records), err)
				return
			}
			c.in.log.Errorf("kafka_share: dead-letter write of %s failed, trying again in %v: %v", recordList(l.Records), wait, err)
			select {
			case <-time.After(wait):
			case <-c.ctx.Done():
			}
			wait = min(wait*2, 10*time.Second)
		}
	}
}

// recordList names records as topic/partition@offset for log lines.
func recordList(rs []*kgo.Record) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%s/%d@%d", r.Topic, r.Partition, r.Offset)
	}
	return strings.Join(parts, ", ")
}

// newShareDeadLetterWriter is newDeadLetterWriter (deadletter.go) for
// kafka_share's config: the same producer, refusing the same topics, and
// letters that name the share group (deadletter.HeaderShareGroup), which
// `status --share-group` reads them by.
func newShareDeadLetterWriter(conf *shareConfig) (*deadLetterWriter, error) {
	cl, p, err := produce.NewClient(conf.conn.Opts(), deadLetterProducer)
	if err != nil {
		return nil, fmt.Errorf("invalid dead-letter producer options: %w", err)
	}
	return &deadLetterWriter{topic: conf.deadLetter, consumed: conf.matcher(), cl: cl, p: p, shareGroup: conf.group}, nil
}

// shareMemberName is who dead-letters a record: the client ID and the host
// name, each cut to 40 bytes, as kafka_watermark's dead letters say.
func shareMemberName(clientID string) string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	cut := func(s string) string { return s[:min(len(s), 40)] }
	return cut(clientID) + "@" + cut(host)
}
