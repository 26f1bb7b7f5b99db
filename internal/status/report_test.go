package status

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// The stall the tests commit: the batch 20-29 of orders/2, nacked three
// times since a fixed instant.
var testStall = commitmeta.Stall{
	Report:   commitmeta.Report{First: 20, Last: 29, Since: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC), Reason: "http 503"},
	Attempts: 3,
	Member:   "watermark-connect@pod-7",
}

// The loss the tests commit: retention deleted offsets 10-29 of orders/1
// before they were delivered, an hour before testStall.
var testLoss = commitmeta.Loss{
	Report: commitmeta.Report{First: 10, Last: 29, Since: time.Date(2026, 1, 1, 11, 0, 0, 0, time.UTC), Reason: commitmeta.CauseRetention},
	Count:  20,
}

// The dead letter the tests commit: 4 of the records 30-39 of orders/0
// went to the dead-letter topic, the first half an hour before testStall,
// the last for "http 400".
var testDeadLetter = commitmeta.DeadLetter{
	Report: commitmeta.Report{First: 30, Last: 39, Since: time.Date(2026, 1, 1, 11, 30, 0, 0, time.UTC), Reason: "http 400"},
	Count:  4,
}

// seedGroup commits, for group, one partition of each kind a report tells
// apart:
//
//	orders/0  healthy: committed at the log end, no ranges
//	orders/1  ranges [50,60) and [70,75) delivered above 40, and a loss
//	          (testLoss): it flows, but lost records
//	orders/2  stalled at 20 (testStall), with [30,40) delivered above it
//	orders/3  another client's metadata
//	other/0   the input's metadata for offset 3 with a stall and a loss, but
//	          committed at 5 (an admin reset): ignored
//	other/1   the input's metadata with malformed stall fields: ignored
func seedGroup(t *testing.T, c *testCluster, group string) {
	t.Helper()
	for p := range int32(4) {
		c.produce(t, "orders", p, 100)
	}
	for p := range int32(2) {
		c.produce(t, "other", p, 10)
	}
	c.commit(t, group, "orders", 0, 100, meta(t, 100, nil, nil))
	c.commit(t, group, "orders", 1, 40, meta(t, 40, []commitmeta.Range{{From: 50, To: 60}, {From: 70, To: 75}}, &testLoss))
	c.commit(t, group, "orders", 2, 20, meta(t, 20, []commitmeta.Range{{From: 30, To: 40}}, &testStall))
	c.commit(t, group, "orders", 3, 10, "watermark-connect-0d5c1a2e-6c1f-4e0b-9a7e-1f2d3c4b5a69")
	c.commit(t, group, "other", 0, 5, meta(t, 3, []commitmeta.Range{{From: 4, To: 5}}, &testStall, &testLoss))
	c.commit(t, group, "other", 1, 2, "wm1 o=2 e=0 sf=2 sl=1")
}

// partitionKey names a partition in failure messages.
type partitionKey struct {
	topic     string
	partition int32
}

func keysOf(r *Report) []partitionKey {
	var out []partitionKey
	for _, p := range r.Partitions {
		out = append(out, partitionKey{p.Topic, p.Partition})
	}
	return out
}

func byPartition(r *Report) map[partitionKey]Partition {
	out := map[partitionKey]Partition{}
	for _, p := range r.Partitions {
		out[partitionKey{p.Topic, p.Partition}] = p
	}
	return out
}

func TestCollect(t *testing.T) {
	c := newCluster(t, 4, "orders")
	require.NoError(t, createTopic(t, c, "other", 2))
	seedGroup(t, c, "g")

	before := time.Now()
	r, err := Collect(testContext(t), c.adm, Query{Group: "g"})
	require.NoError(t, err)
	assert.Equal(t, "g", r.Group)
	assert.False(t, r.At.Before(before), "At is when the offsets were read")
	assert.False(t, r.Healthy())
	assert.Equal(t, 1, r.Stalled())
	assert.Equal(t, 1, r.Lost())

	assert.Equal(t, []partitionKey{{"orders", 0}, {"orders", 1}, {"orders", 2}, {"orders", 3}, {"other", 0}, {"other", 1}}, keysOf(r),
		"every committed partition, sorted")

	got := byPartition(r)
	for _, tc := range []struct {
		key                               partitionKey
		committed, logEnd, lag, delivered int64
		stalled, lost                     bool
		metaErr                           string // a part of MetadataErr; "" for none
	}{
		{partitionKey{"orders", 0}, 100, 100, 0, 0, false, false, ""},
		{partitionKey{"orders", 1}, 40, 100, 60, 15, false, true, ""},
		{partitionKey{"orders", 2}, 20, 100, 80, 10, true, false, ""},
		{partitionKey{"orders", 3}, 10, 100, 90, 0, false, false, ""},
		{partitionKey{"other", 0}, 5, 10, 5, 0, false, false, "written for offset 3, not the committed offset 5"},
		{partitionKey{"other", 1}, 2, 10, 8, 0, false, false, "stall field sl"},
	} {
		p := got[tc.key]
		lag, ok := p.Lag()
		assert.True(t, ok, "%v has a commit", tc.key)
		assert.Equal(t, []int64{tc.committed, tc.logEnd, tc.lag, tc.delivered}, []int64{p.Committed, p.LogEnd, lag, p.DeliveredAbove},
			"%v: committed, log end, lag, delivered above", tc.key)
		assert.Equal(t, tc.stalled, p.Stalled(), "%v stalled", tc.key)
		assert.Equal(t, tc.lost, p.Lost(), "%v lost", tc.key)
		if tc.metaErr == "" {
			assert.NoError(t, p.MetadataErr, "%v", tc.key)
		} else if assert.Error(t, p.MetadataErr, "%v", tc.key) {
			assert.Contains(t, p.MetadataErr.Error(), tc.metaErr, "%v", tc.key)
		}
	}
	if s := got[partitionKey{"orders", 2}].Stall; assert.NotNil(t, s) {
		assert.Equal(t, testStall.First, s.First)
		assert.Equal(t, testStall.Last, s.Last)
		assert.True(t, testStall.Since.Equal(s.Since), "since %v, want %v", s.Since, testStall.Since)
		assert.Equal(t, testStall.Attempts, s.Attempts)
		assert.Equal(t, testStall.Reason, s.Reason)
		assert.Equal(t, testStall.Member, s.Member)
	}
	if l := got[partitionKey{"orders", 1}].Loss; assert.NotNil(t, l) {
		assert.Equal(t, []int64{testLoss.First, testLoss.Last, testLoss.Count}, []int64{l.First, l.Last, l.Count})
		assert.True(t, testLoss.Since.Equal(l.Since), "since %v, want %v", l.Since, testLoss.Since)
		assert.Equal(t, commitmeta.CauseRetention, l.Reason)
	}
}

func TestCollectTopics(t *testing.T) {
	c := newCluster(t, 4, "orders")
	require.NoError(t, createTopic(t, c, "other", 2))
	require.NoError(t, createTopic(t, c, "fresh", 2))
	seedGroup(t, c, "g")

	for _, tc := range []struct {
		name  string
		q     Query
		want  []partitionKey
		fresh bool // the fresh partitions are listed without a commit
	}{
		{"one topic", Query{Group: "g", Topics: []string{"other"}}, []partitionKey{{"other", 0}, {"other", 1}}, false},
		{"a topic without commits", Query{Group: "g", Topics: []string{"other", "fresh"}},
			[]partitionKey{{"fresh", 0}, {"fresh", 1}, {"other", 0}, {"other", 1}}, true},
		// The group is known by its other commits.
		{"only a topic without commits", Query{Group: "g", Topics: []string{"fresh"}},
			[]partitionKey{{"fresh", 0}, {"fresh", 1}}, true},
		{"regexp, unanchored as the input's", Query{Group: "g", Topics: []string{"res", "^oth"}, RegexpTopics: true},
			[]partitionKey{{"fresh", 0}, {"fresh", 1}, {"other", 0}, {"other", 1}}, true},
	} {
		r, err := Collect(testContext(t), c.adm, tc.q)
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, keysOf(r), tc.name)
		if tc.fresh {
			p := byPartition(r)[partitionKey{"fresh", 1}]
			_, hasLag := p.Lag()
			assert.Equal(t, int64(-1), p.Committed, "%s: fresh/1 has no commit", tc.name)
			assert.False(t, hasLag, "%s: no lag without a commit", tc.name)
		}
	}

	_, err := Collect(testContext(t), c.adm, Query{Group: "g", Topics: []string{"orders", "missing"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `topic "missing": UNKNOWN_TOPIC_OR_PARTITION`)

	_, err = Collect(testContext(t), c.adm, Query{Group: "g", Topics: []string{"("}, RegexpTopics: true})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `topics: "(" is not a valid regular expression`)
}

// A group keeps its commits for a deleted topic until they expire: they are
// left out of a report of every partition, not an error that would fail
// every probe until then.
func TestCollectDeletedTopic(t *testing.T) {
	c := newCluster(t, 2, "orders")
	require.NoError(t, createTopic(t, c, "gone", 1))
	c.produce(t, "orders", 0, 10)
	c.produce(t, "gone", 0, 10)
	c.commit(t, "g", "orders", 0, 10, meta(t, 10, nil, nil))
	c.commit(t, "g", "gone", 0, 5, meta(t, 5, nil, &testStall))
	resp, err := c.adm.DeleteTopic(testContext(t), "gone")
	require.NoError(t, err)
	require.NoError(t, resp.Err)

	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		r, err := Collect(testContext(t), c.adm, Query{Group: "g"})
		if assert.NoError(ct, err) {
			assert.Equal(ct, []partitionKey{{"orders", 0}}, keysOf(r))
			assert.True(ct, r.Healthy())
		}
	}, 10*time.Second, 50*time.Millisecond)

	// A topic asked for by name must exist.
	_, err = Collect(testContext(t), c.adm, Query{Group: "g", Topics: []string{"gone"}})
	if assert.Error(t, err) {
		assert.Contains(t, err.Error(), "gone")
		assert.Contains(t, err.Error(), "UNKNOWN_TOPIC_OR_PARTITION")
	}
}

func TestCollectUnknownGroup(t *testing.T) {
	c := newCluster(t, 2, "orders")
	c.produce(t, "orders", 0, 10)
	for _, q := range []Query{
		{Group: "nosuch"},
		{Group: "nosuch", Topics: []string{"orders"}},
	} {
		r, err := Collect(testContext(t), c.adm, q)
		assert.Nil(t, r, "%+v", q)
		assert.ErrorIs(t, err, ErrUnknownGroup, "%+v", q)
		if err != nil {
			assert.Contains(t, err.Error(), `unknown group "nosuch"`)
		}
	}
}

// A group whose member joined but has not committed yet is known, whatever
// its protocol: its partitions are reported without a commit, and it is
// healthy.
func TestCollectGroupWithoutCommits(t *testing.T) {
	c := newCluster(t, 2, "orders")
	c.produce(t, "orders", 0, 3)
	for _, tc := range []struct {
		protocol string
		opts     []kgo.Opt
	}{
		{"classic", nil},
		{"consumer", []kgo.Opt{kgo.ServerSideBalancer()}},
	} {
		group := "live-" + tc.protocol
		member, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.addr), kgo.ConsumerGroup(group),
			kgo.ConsumeTopics("orders"), kgo.DisableAutoCommit()}, tc.opts...)...)
		require.NoError(t, err)
		t.Cleanup(member.Close)
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			pollCtx, stop := context.WithTimeout(t.Context(), 100*time.Millisecond)
			member.PollFetches(pollCtx)
			stop()
			listed, err := c.adm.ListGroups(testContext(t))
			if assert.NoError(ct, err) {
				assert.Equal(ct, "Stable", listed[group].State)
			}
		}, 15*time.Second, 50*time.Millisecond, "the %s member to join", tc.protocol)

		r, err := Collect(testContext(t), c.adm, Query{Group: group, Topics: []string{"orders"}})
		require.NoError(t, err, tc.protocol)
		assert.True(t, r.Healthy(), tc.protocol)
		require.Len(t, r.Partitions, 2, tc.protocol)
		for _, p := range r.Partitions {
			assert.Equal(t, int64(-1), p.Committed, "%s: %s/%d", tc.protocol, p.Topic, p.Partition)
			assert.False(t, p.NotConsumed, "%s: %s/%d is assigned to the member", tc.protocol, p.Topic, p.Partition)
		}
	}
}

func TestReadMetadata(t *testing.T) {
	const badLoss = "lf=7 ll=9 ln=4 ls=0 lc=retention" // 4 offsets lost of 3
	for _, tc := range []struct {
		name          string
		committed     int64
		meta          string
		delivered     int64
		stalled, lost bool
		err           error  // errors.Is target, or nil for no MetadataErr
		errText       string // a part of MetadataErr's message, or ""
	}{
		{"empty", 7, "", 0, false, false, nil, ""},
		{"another client's", 7, "consumer-1-abc", 0, false, false, nil, ""},
		{"ours, no ranges", 7, "wm1 o=7 e=0", 0, false, false, nil, ""},
		{"ours, ranges", 7, "wm1 o=7 e=0 d=3.2,1.1", 3, false, false, nil, ""},
		{"ours, a stall", 7, "wm1 o=7 e=0 " + testStall.Fields(), 0, true, false, nil, ""},
		{"ours, a loss", 7, "wm1 o=7 e=0 d=3.2 " + testLoss.Fields() + " l=0", 2, false, true, nil, ""},
		{"ours, a stall and a loss", 7, "wm1 o=7 e=0 " + testStall.Fields() + " " + testLoss.Fields(), 0, true, true, nil, ""},
		{"a newer version", 7, "wm2 o=7", 0, false, false, commitmeta.ErrVersion, ""},
		{"malformed", 7, "wm1 o=7", 0, false, false, commitmeta.ErrMissingField, ""},
		{"a malformed stall", 7, "wm1 o=7 e=0 sf=7 sa=1", 0, false, false, commitmeta.ErrMissingField, "stall field sl"},
		// Like a malformed stall: left out and named, the rest used. A
		// malformed loss report does not hide a stall.
		{"a malformed loss", 7, "wm1 o=7 e=0 d=3.2 " + badLoss, 2, false, false, nil, `loss field ln="4"`},
		{"a loss without its cause", 7, "wm1 o=7 e=0 lf=1 ll=2 ln=1 ls=0", 0, false, false, commitmeta.ErrMissingField, "loss field lc"},
		{"a stall and a malformed loss", 7, "wm1 o=7 e=0 " + testStall.Fields() + " " + badLoss, 0, true, false, nil, `loss field ln="4"`},
		{"a malformed stall and a loss", 7, "wm1 o=7 e=0 sf=7 sa=1 " + testLoss.Fields(), 0, false, true, commitmeta.ErrMissingField, "stall field sl"},
		{"both malformed", 7, "wm1 o=7 e=0 sf=7 sa=1 " + badLoss, 0, false, false, commitmeta.ErrMissingField, `stall field sl: want a decimal offset from 0 to 9223372036854775807, no sign or leading zeros and at least sf: missing field; commitmeta: loss field ln="4"`},
		// Written for another offset: no report is used, as no range is.
		{"a loss for another offset", 9, "wm1 o=7 e=0 d=3.2 " + testLoss.Fields(), 0, false, false, nil, "written for offset 7, not the committed offset 9"},
	} {
		p := Partition{Committed: tc.committed}
		p.readMetadata(tc.meta)
		assert.Equal(t, tc.delivered, p.DeliveredAbove, tc.name)
		assert.Equal(t, tc.stalled, p.Stalled(), "%s: stalled", tc.name)
		assert.Equal(t, tc.lost, p.Lost(), "%s: lost", tc.name)
		if tc.err == nil && tc.errText == "" {
			assert.NoError(t, p.MetadataErr, tc.name)
			continue
		}
		if !assert.Error(t, p.MetadataErr, tc.name) {
			continue
		}
		if tc.err != nil {
			assert.True(t, errors.Is(p.MetadataErr, tc.err), "%s: MetadataErr %v, want %v", tc.name, p.MetadataErr, tc.err)
		}
		assert.Contains(t, p.MetadataErr.Error(), tc.errText, tc.name)
		assert.NotContains(t, p.MetadataErr.Error(), "\n", "%s: one line in the text output", tc.name)
	}

	// Both reports stay reachable when both are malformed.
	p := Partition{Committed: 7}
	p.readMetadata("wm1 o=7 e=0 sf=7 sa=1 " + badLoss)
	assert.Equal(t, []commitmeta.Kind{commitmeta.KindStall, commitmeta.KindLoss}, reportKinds(p.MetadataErr),
		"MetadataErr %v, want a stall and a loss *ReportError", p.MetadataErr)
}

// reportKinds returns the kinds of the *commitmeta.ReportError err holds,
// one for each error a reportErrors joins, in order.
func reportKinds(err error) []commitmeta.Kind {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var kinds []commitmeta.Kind
	for _, err := range errs {
		if re := (*commitmeta.ReportError)(nil); errors.As(err, &re) {
			kinds = append(kinds, re.Kind)
		}
	}
	return kinds
}

// TestReadMetadataDeadLetter: the dead-letter report is read like the loss
// report, on its own: a malformed one is left out and named, and hides
// neither the other reports nor the ranges; the runs of attempts (a=) that
// the input writes next to it are not status's to show.
func TestReadMetadataDeadLetter(t *testing.T) {
	const badLoss = "lf=7 ll=9 ln=4 ls=0 lc=retention"
	const badDead = "xf=7 xl=6 xn=1 xs=0 xr=x" // xl below xf
	dead := testDeadLetter.Fields()
	for _, tc := range []struct {
		name                string
		meta                string
		delivered           int64
		stalled, lost, dead bool
		errText             string // a part of MetadataErr's message, or "" for none
	}{
		{"a dead letter", "wm1 o=7 e=0 d=3.2 a=0.3.2 " + dead + " l=0", 2, false, false, true, ""},
		{"every report", "wm1 o=7 e=0 " + testStall.Fields() + " " + testLoss.Fields() + " a=0.3.2 " + dead, 0, true, true, true, ""},
		{"a malformed dead letter", "wm1 o=7 e=0 d=3.2 " + testStall.Fields() + " " + badDead + " l=0", 2, true, false, false, `dead-letter field xl="6"`},
		{"a dead letter without its error", "wm1 o=7 e=0 xf=1 xl=2 xn=1 xs=0", 0, false, false, false, "dead-letter field xr"},
		{"all three malformed", "wm1 o=7 e=0 sf=7 sa=1 " + badLoss + " " + badDead, 0, false, false, false, `stall field sl`},
		{"a dead letter for another offset", "wm1 o=6 e=0 " + dead, 0, false, false, false, "written for offset 6"},
	} {
		p := Partition{Committed: 7}
		p.readMetadata(tc.meta)
		assert.Equal(t, tc.delivered, p.DeliveredAbove, tc.name)
		assert.Equal(t, tc.stalled, p.Stalled(), "%s: stalled", tc.name)
		assert.Equal(t, tc.lost, p.Lost(), "%s: lost", tc.name)
		assert.Equal(t, tc.dead, p.DeadLettered(), "%s: dead-lettered", tc.name)
		if tc.dead {
			assert.Equal(t, testDeadLetter.Reason, p.DeadLetter.Reason, tc.name)
			assert.True(t, testDeadLetter.Since.Equal(p.DeadLetter.Since), tc.name)
		}
		if tc.errText == "" {
			assert.NoError(t, p.MetadataErr, tc.name)
			continue
		}
		if assert.Error(t, p.MetadataErr, tc.name) {
			assert.Contains(t, p.MetadataErr.Error(), tc.errText, tc.name)
			assert.NotContains(t, p.MetadataErr.Error(), "\n", "%s: one line in the text output", tc.name)
		}
	}

	// All three stay reachable when all three are malformed.
	p := Partition{Committed: 7}
	p.readMetadata("wm1 o=7 e=0 sf=7 sa=1 " + badLoss + " " + badDead)
	assert.Equal(t, []commitmeta.Kind{commitmeta.KindStall, commitmeta.KindLoss, commitmeta.KindDeadLetter}, reportKinds(p.MetadataErr),
		"MetadataErr %v, want a stall, a loss and a dead-letter *ReportError", p.MetadataErr)
	assert.Equal(t, 3, strings.Count(p.MetadataErr.Error(), "commitmeta: "), "MetadataErr %v: three errors on one line", p.MetadataErr)
}
