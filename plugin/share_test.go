package plugin

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/deadletter"
	"github.com/watermark-connect/watermark-connect/internal/kafkamsg"
)

// shareCluster is a kfake cluster for the kafka_share tests, with a lock
// of lockMs (0: kfake's 30 s) swept every 100 ms.
func shareCluster(t *testing.T, lockMs int, topics ...string) string {
	t.Helper()
	cfg := map[string]string{"share.record.lock.sweep.interval.ms": "100"}
	if lockMs > 0 {
		cfg["group.share.record.lock.duration.ms"] = strconv.Itoa(lockMs)
	}
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topics...), kfake.BrokerConfigs(cfg))
	require.NoError(t, err)
	t.Cleanup(kc.Close)
	return kc.ListenAddrs()[0]
}

// produceValues writes one record per value to topic, in order.
func produceValues(t *testing.T, addr, topic string, values ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	defer cl.Close()
	for _, v := range values {
		require.NoError(t, cl.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr())
	}
}

// newShareTestInput parses a kafka_share config for addr, topic and group
// (start_offset: earliest) with extra fields, and connects it. Close is
// the test's cleanup unless the test closes it first.
func newShareTestInput(t *testing.T, addr, topic, group, extra string) *ShareInput {
	t.Helper()
	return connectShareTestInput(t, newShareInput(shareTestConfig(t, addr, topic, group, extra), service.MockResources()))
}

// shareTestConfig is newShareTestInput's config.
func shareTestConfig(t *testing.T, addr, topic, group, extra string) *shareConfig {
	t.Helper()
	yaml := fmt.Sprintf("seed_brokers: [ %s ]\ntopics: [ %s ]\nshare_group: %s\nstart_offset: earliest\n%s", addr, topic, group, extra)
	pc, err := ShareConfigSpec().ParseYAML(yaml, nil)
	require.NoError(t, err)
	conf, err := parseShareConfig(pc)
	require.NoError(t, err)
	return conf
}

// connectShareTestInput connects in, and closes it at the test's end.
func connectShareTestInput(t *testing.T, in *ShareInput) *ShareInput {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, in.Connect(ctx))
	t.Cleanup(func() { _ = in.Close(context.Background()) })
	return in
}

// got is one message read: its value, offset and delivery attempt.
type got struct {
	value   string
	offset  int64
	attempt int
}

// readShare reads one batch within 15 s.
func readShare(t *testing.T, in *ShareInput) ([]got, service.AckFunc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	msgs, ack, err := in.ReadBatch(ctx)
	require.NoError(t, err)
	out := make([]got, len(msgs))
	for i, m := range msgs {
		b, err := m.AsBytes()
		require.NoError(t, err)
		off, _ := m.MetaGetMut("kafka_offset")
		grp, _ := m.MetaGetMut(MetaShareGroup)
		require.NotEmpty(t, grp, "kafka_share_group")
		_, hasLag := m.MetaGetMut("kafka_lag")
		require.False(t, hasLag, "kafka_lag: a share fetch reports no log end, so none is set")
		out[i] = got{value: string(b), offset: int64(off.(int)), attempt: shareAttempt(t, m)}
	}
	return out, ack
}

// shareAttempt is m's kafka_delivery_attempt: absent on a first delivery,
// which it reports as 1, and never 1 when set.
func shareAttempt(t *testing.T, m *service.Message) int {
	t.Helper()
	a, ok := m.MetaGetMut(kafkamsg.MetaDeliveryAttempt)
	if !ok {
		return 1
	}
	n, isInt := a.(int)
	require.True(t, isInt, "kafka_delivery_attempt %v (%T): want an int", a, a)
	require.Greater(t, n, 1, "kafka_delivery_attempt is set from the second delivery on")
	return n
}

// waitShareStart polls, for up to 15 s, the share-partition start offset of
// partition 0 of topic for group until it reaches want.
func waitShareStart(t *testing.T, addr, group, topic string, want int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var last int64 = -1
	require.Eventually(t, func() bool {
		ds, err := adm.DescribeShareGroupOffsets(context.Background(), group)
		if err != nil {
			return false
		}
		if o, ok := ds[group].Offsets.Lookup(topic, 0); ok {
			last = o.StartOffset
		}
		return last == want
	}, 15*time.Second, 20*time.Millisecond, "share-partition start offset of %s/%s: last %d, want %d", group, topic, last, want)
}

// An ack accepts: the share-partition start offset passes every record.
func TestShareAckAccepts(t *testing.T) {
	addr := shareCluster(t, 0, "t")
	produceValues(t, addr, "t", "a", "b", "c")
	in := newShareTestInput(t, addr, "t", "g", "")
	seen := 0
	for seen < 3 {
		msgs, ack := readShare(t, in)
		for _, m := range msgs {
			require.Equal(t, 1, m.attempt, "first delivery of %s", m.value)
		}
		seen += len(msgs)
		require.NoError(t, ack(context.Background(), nil))
	}
	waitShareStart(t, addr, "g", "t", 3)
}

// A nack releases: the record comes back with the next delivery attempt.
func TestShareNackReleases(t *testing.T) {
	addr := shareCluster(t, 0, "t")
	produceValues(t, addr, "t", "a")
	in := newShareTestInput(t, addr, "t", "g", "members: 1")
	msgs, ack := readShare(t, in)
	require.Equal(t, []got{{"a", 0, 1}}, msgs)
	require.NoError(t, ack(context.Background(), errors.New("sink down")))
	msgs, ack = readShare(t, in)
	require.Equal(t, []got{{"a", 0, 2}}, msgs, "released and delivered again")
	require.NoError(t, ack(context.Background(), nil))
	waitShareStart(t, addr, "g", "t", 1)
}

// Regression test for kgo's auto-accept (finalizePreviousPoll,
// consumer_share.go:485-496 in kgo): a member polled again while a record
// of its previous poll is in the pipeline accepts that record at the start
// of the poll, so a later failure of it is lost. With one member, a read
// while "a" has no verdict must wait (here until its deadline) instead of
// polling; "a", failed then, comes back at its second attempt.
func TestShareNoAutoAcceptOfRecordsInFlight(t *testing.T) {
	addr := shareCluster(t, 0, "t")
	produceValues(t, addr, "t", "a", "b")
	in := newShareTestInput(t, addr, "t", "g", "members: 1\nbatch_max_records: 1")
	first, ackFirst := readShare(t, in)
	require.Equal(t, []got{{"a", 0, 1}}, first)

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	msgs, ack, err := in.ReadBatch(ctx)
	if err == nil {
		_ = ack(context.Background(), nil)
		t.Fatalf("read %d messages while the only member held \"a\": it polled, and kgo accepted \"a\"", len(msgs))
	}
	require.ErrorIs(t, err, context.DeadlineExceeded)

	require.NoError(t, ackFirst(context.Background(), errors.New("sink failed")))
	var all []got
	for len(all) < 2 {
		msgs, ack := readShare(t, in)
		all = append(all, msgs...)
		require.NoError(t, ack(context.Background(), nil))
	}
	require.ElementsMatch(t, []got{{"a", 0, 2}, {"b", 1, 1}}, all, "a came back at its second attempt")
	waitShareStart(t, addr, "g", "t", 2)
}

// A *service.BatchError settles each record by its own verdict.
func TestShareBatchErrorPerRecord(t *testing.T) {
	addr := shareCluster(t, 0, "t")
	produceValues(t, addr, "t", "a", "b", "c")
	in := newShareTestInput(t, addr, "t", "g", "members: 1")
	var all []got
	var batch service.MessageBatch
	var ack service.AckFunc
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for len(batch) < 3 { // kfake may return the three in one fetch or not
		var err error
		batch, ack, err = in.ReadBatch(ctx)
		require.NoError(t, err)
		if len(batch) < 3 {
			require.NoError(t, ack(ctx, errors.New("not this one")))
			t.Skip("kfake split the three records over fetches")
		}
	}
	berr := service.NewBatchError(batch, errors.New("b failed")).Failed(1, errors.New("b failed"))
	require.NoError(t, ack(ctx, berr))
	msgs, ack := readShare(t, in)
	all = append(all, msgs...)
	require.NoError(t, ack(ctx, nil))
	require.Equal(t, []got{{"b", 1, 2}}, all, "only b released")
	waitShareStart(t, addr, "g", "t", 3)
}

// At max_attempts a failed record is written to the dead-letter topic and
// then accepted; without one it is rejected. Neither comes back.
func TestShareLastAttempt(t *testing.T) {
	for _, c := range []struct {
		name, extra string
		dl          bool
	}{
		{"dead-lettered", "dead_letter:\n  topic: dlq\n  max_attempts: 2", true},
		{"rejected", "dead_letter:\n  max_attempts: 2", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr := shareCluster(t, 0, "t", "dlq")
			produceValues(t, addr, "t", "poison")
			in := newShareTestInput(t, addr, "t", "g", "members: 1\n"+c.extra)
			for attempt := 1; attempt <= 2; attempt++ {
				msgs, ack := readShare(t, in)
				require.Equal(t, []got{{"poison", 0, attempt}}, msgs)
				require.NoError(t, ack(context.Background(), errors.New("always fails")))
			}
			waitShareStart(t, addr, "g", "t", 1)
			letters := readTopic(t, addr, "dlq")
			if !c.dl {
				require.Empty(t, letters)
				return
			}
			require.Len(t, letters, 1)
			require.Equal(t, "poison", string(letters[0].Value))
			headers := map[string]string{}
			for _, h := range letters[0].Headers {
				headers[h.Key] = string(h.Value)
			}
			require.Equal(t, "t", headers["dead_letter_topic"])
			require.Equal(t, "2", headers["dead_letter_attempts"])
			require.Equal(t, "g", headers["dead_letter_share_group"], "the letter names its share group")
			p, err := deadletter.Parse(letters[0])
			require.NoError(t, err)
			require.Equal(t, "g", p.ShareGroup)
		})
	}
}

// readTopic reads every record of topic's partition 0 as it is now.
func readTopic(t *testing.T, addr, topic string) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	defer cl.Close()
	offs, err := kadm.NewClient(cl).ListEndOffsets(context.Background(), topic)
	require.NoError(t, err)
	end, _ := offs.Lookup(topic, 0)
	if end.Offset == 0 {
		return nil
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}})
	var out []*kgo.Record
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for int64(len(out)) < end.Offset {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		out = append(out, fs.Records()...)
	}
	return out
}

// A graceful close releases what the input holds: another member gets it
// at once (the lock is a minute: a release, not an expiry), at the next
// attempt.
func TestShareCloseReleases(t *testing.T) {
	addr := shareCluster(t, 60000, "t")
	produceValues(t, addr, "t", "a")
	first := newShareTestInput(t, addr, "t", "g", "members: 1")
	msgs, _ := readShare(t, first)
	require.Equal(t, []got{{"a", 0, 1}}, msgs)
	require.NoError(t, first.Close(context.Background()))

	second := newShareTestInput(t, addr, "t", "g", "members: 1")
	msgs, ack := readShare(t, second)
	require.Equal(t, []got{{"a", 0, 2}}, msgs)
	require.NoError(t, ack(context.Background(), nil))
	waitShareStart(t, addr, "g", "t", 1)
}

// A record held past its lock is renewed, not delivered to another member.
func TestShareRenewsHeldRecords(t *testing.T) {
	// A 2 s lock renewed every second leaves a second of slack, enough for
	// a renewal's round trip under -race on a loaded machine; 1 s was not.
	addr := shareCluster(t, 2000, "t")
	produceValues(t, addr, "t", "slow")
	holder := newShareTestInput(t, addr, "t", "g", "members: 1")
	msgs, ack := readShare(t, holder)
	require.Equal(t, []got{{"slow", 0, 1}}, msgs)

	other := newShareTestInput(t, addr, "t", "g", "members: 1")
	stolen := make(chan []got, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		msgs, ack, err := other.ReadBatch(ctx)
		if err == nil {
			var g []got
			for _, m := range msgs {
				b, _ := m.AsBytes()
				g = append(g, got{value: string(b)})
			}
			stolen <- g
			_ = ack(context.Background(), nil)
		}
	}()
	// Held for two lock durations at least: renewed four times.
	require.Eventually(t, func() bool { return holder.m.renewedN.Load() >= 4 }, 20*time.Second, 10*time.Millisecond)
	require.NoError(t, ack(context.Background(), nil))
	waitShareStart(t, addr, "g", "t", 1)
	cancel()
	<-done
	select {
	case g := <-stolen:
		t.Fatalf("another member got %v while it was held and renewed", g)
	default:
	}
}

// max_attempts above the group's delivery limit is refused at connect,
// naming the field, the value and the limit.
func TestShareMaxAttemptsAboveLimit(t *testing.T) {
	addr := shareCluster(t, 0, "t")
	pc, err := ShareConfigSpec().ParseYAML(fmt.Sprintf("seed_brokers: [ %s ]\ntopics: [ t ]\nshare_group: g\ndead_letter:\n  max_attempts: 6\n", addr), nil)
	require.NoError(t, err)
	conf, err := parseShareConfig(pc)
	require.NoError(t, err)
	in := newShareInput(conf, service.MockResources())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = in.Connect(ctx)
	require.ErrorContains(t, err, `dead_letter.max_attempts (6) must be at most the share group "g"'s delivery count limit (5)`)
	require.NoError(t, in.Close(ctx))
}

// Depth does not collapse to one poll at a time: with four members, four
// polls are in the pipeline at once, all of one partition, and a fifth read
// waits for a verdict.
func TestShareDepthAcrossMembers(t *testing.T) {
	addr := shareCluster(t, 0, "t")
	produceValues(t, addr, "t", "a", "b", "c", "d", "e", "f", "g", "h")
	in := newShareTestInput(t, addr, "t", "g", "members: 4\nbatch_max_records: 2")
	var acks []service.AckFunc
	seen := map[int64]bool{}
	for len(acks) < 4 {
		msgs, ack := readShare(t, in)
		for _, m := range msgs {
			require.False(t, seen[m.offset], "offset %d handed out twice", m.offset)
			seen[m.offset] = true
		}
		acks = append(acks, ack)
	}
	require.Equal(t, int64(len(seen)), in.m.inFlightN.Load(), "records in flight")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, _, err := in.ReadBatch(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a fifth poll while every member holds one")
	for _, ack := range acks {
		require.NoError(t, ack(context.Background(), nil))
	}
	require.Zero(t, in.m.inFlightN.Load())
	for len(seen) < 8 {
		msgs, ack := readShare(t, in)
		for _, m := range msgs {
			seen[m.offset] = true
		}
		require.NoError(t, ack(context.Background(), nil))
	}
	waitShareStart(t, addr, "g", "t", 8)
}

// A verdict the broker refuses because the record's lock expired is
// counted. The input read the group's lock (a minute) at connect and
// renews every 10 s; the broker's lock is then cut to 500 ms, so the
// record held goes back to the group before the input renews it, comes
// back at its second attempt, and the first verdict is refused.
func TestShareCountsExpiredLocks(t *testing.T) {
	addr := shareCluster(t, 60000, "t")
	produceValues(t, addr, "t", "a")
	in := newShareTestInput(t, addr, "t", "g", "members: 2")

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	defer cl.Close()
	short := "500"
	_, err = kadm.NewClient(cl).AlterBrokerConfigs(context.Background(), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "group.share.record.lock.duration.ms", Value: &short}})
	require.NoError(t, err)

	first, ackFirst := readShare(t, in)
	require.Equal(t, []got{{"a", 0, 1}}, first)
	again, ackAgain := readShare(t, in) // the other member, once the lock expired
	require.Equal(t, []got{{"a", 0, 2}}, again)
	require.NoError(t, ackFirst(context.Background(), nil))
	require.Eventually(t, func() bool { return in.m.lockLostN.Load() >= 1 }, 15*time.Second, 10*time.Millisecond,
		"the refused verdict is counted")
	require.NoError(t, ackAgain(context.Background(), nil))
	waitShareStart(t, addr, "g", "t", 1)
}

// Regression test: a release rode on the releasing member's next fetch,
// which acquired the record again for that same member, so a member
// waiting for records never got it (demo --share on kfake: 0 of 48
// released records went to another member). The release now goes to the
// broker alone before the member is freed: the member waiting in a fetch
// gets the record, at its second attempt.
func TestShareReleaseGoesToAWaitingMember(t *testing.T) {
	addr := shareCluster(t, 0, "t")
	ins := []*ShareInput{
		newShareTestInput(t, addr, "t", "g", "members: 1"),
		newShareTestInput(t, addr, "t", "g", "members: 1"),
	}
	type read struct {
		who  int
		msgs service.MessageBatch
		ack  service.AckFunc
		err  error
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	reads := make(chan read, len(ins))
	for i, in := range ins {
		go func() {
			msgs, ack, err := in.ReadBatch(ctx)
			reads <- read{i, msgs, ack, err}
		}()
	}
	// Both members poll from Connect on: both wait in a fetch now.
	produceValues(t, addr, "t", "x")
	attempt := func(r read) (string, int) {
		require.NoError(t, r.err)
		require.Len(t, r.msgs, 1)
		b, err := r.msgs[0].AsBytes()
		require.NoError(t, err)
		return string(b), shareAttempt(t, r.msgs[0])
	}
	first := <-reads
	v, a := attempt(first)
	require.Equal(t, "x", v)
	require.Equal(t, 1, a)
	require.NoError(t, first.ack(ctx, errors.New("sink down")))
	second := <-reads
	v, a = attempt(second)
	require.Equal(t, "x", v)
	require.Equal(t, 2, a, "released and delivered again")
	require.NotEqual(t, first.who, second.who, "the member waiting for records got the released one")
	require.NoError(t, second.ack(ctx, nil))
}
