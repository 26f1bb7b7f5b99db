package status

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// deleteRecords moves the log start of topic/partition to offset, as
// retention does.
func (c *testCluster) deleteRecords(t *testing.T, topic string, partition int32, offset int64) {
	t.Helper()
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: topic, Partition: partition, At: offset})
	resp, err := c.adm.DeleteRecords(testContext(t), offs)
	require.NoError(t, err)
	require.NoError(t, resp.Error())
}

// inputMeta encodes c as the input writes a commit's metadata: with the
// leader epoch of the last delivered range (l=), without which the input
// takes no range as delivered. Every record has leader epoch 0.
func inputMeta(t *testing.T, c commitmeta.Commit) string {
	t.Helper()
	c.EpochOf = func(int64) int32 { return 0 }
	s, cut, _ := commitmeta.EncodeCommit(c, 4000)
	require.Zero(t, cut)
	return s
}

// A commit below the log start read as healthy. Retention deleted 50
// records of a stopped pipeline that it had not delivered: status showed
// lag 100 (counting the deleted records) and exited 0 until the pipeline
// restarted and reported the loss itself. Status now sees the loss from the
// log start, counts it as the input will on restart (ranges delivered above
// the commit, and a loss the commit carries for every offset of its span,
// are not lost again), and the lag counts only records that exist.
func TestCollectBelowLogStart(t *testing.T) {
	c := newCluster(t, 6, "orders")
	for p := range int32(6) {
		c.produce(t, "orders", p, 150)
	}
	carried := commitmeta.Loss{Report: commitmeta.Report{First: 50, Last: 59, Since: testLoss.Since, Reason: commitmeta.CauseRetention}, Count: 10}
	c.commit(t, "g", "orders", 0, 50, meta(t, 50, nil, nil))
	c.commit(t, "g", "orders", 1, 50, inputMeta(t, commitmeta.Commit{Base: 50, Delivered: []commitmeta.Range{{From: 60, To: 70}, {From: 120, To: 130}}}))
	c.commit(t, "g", "orders", 2, 50, meta(t, 50, nil, &carried))
	c.commit(t, "g", "orders", 3, 100, meta(t, 100, nil, nil))
	c.commit(t, "g", "orders", 4, 50, inputMeta(t, commitmeta.Commit{Base: 50, Delivered: []commitmeta.Range{{From: 51, To: 100}}}))
	c.commit(t, "g", "orders", 5, 50, inputMeta(t, commitmeta.Commit{Base: 50, Delivered: []commitmeta.Range{{From: 51, To: 100}},
		Loss: &commitmeta.Loss{Report: commitmeta.Report{First: 50, Last: 50, Since: testLoss.Since, Reason: commitmeta.CauseRetention}, Count: 1}}))
	for p := range int32(6) {
		c.deleteRecords(t, "orders", p, 100)
	}

	r, err := Collect(testContext(t), c.adm, Query{Group: "g"})
	require.NoError(t, err)
	got := byPartition(r)
	for _, tc := range []struct {
		partition int32
		want      *GoneBelowStart
	}{
		{0, &GoneBelowStart{First: 50, Last: 99, Count: 50, LogStart: 100}},
		// The ranges delivered above the commit are not lost; those above
		// the log start change nothing.
		{1, &GoneBelowStart{First: 50, Last: 99, Count: 40, LogStart: 100}},
		// The commit carries the loss of 50-59 already.
		{2, &GoneBelowStart{First: 60, Last: 99, Count: 40, LogStart: 100}},
		{3, nil}, // committed at the log start
		{5, nil}, // every offset below the log start delivered and reported
		{4, &GoneBelowStart{First: 50, Last: 50, Count: 1, LogStart: 100}}, // all but the commit's own offset delivered
	} {
		p := got[partitionKey{"orders", tc.partition}]
		assert.Equal(t, tc.want, p.BelowStart, "orders/%d: lost below the log start", tc.partition)
		assert.Equal(t, int64(100), p.LogStart, "orders/%d: log start", tc.partition)
		lag, _ := p.Lag()
		assert.Equal(t, int64(50), lag, "orders/%d: lag counts only the records that exist", tc.partition)
	}
	assert.Equal(t, 5, r.Lost(), "orders/5 carries a loss report")
	assert.Equal(t, ExitLost, r.ExitStatus())
}

// The same through Run: LOST shows it, marked as seen by status, next to a
// loss report the commit carries, and the exit status is ExitLost.
func TestRunBelowLogStart(t *testing.T) {
	c := newCluster(t, 2, "orders")
	for p := range int32(2) {
		c.produce(t, "orders", p, 150)
	}
	c.commit(t, "g", "orders", 0, 50, meta(t, 50, nil, nil))
	c.commit(t, "g", "orders", 1, 40, meta(t, 40, nil, &testLoss))
	c.deleteRecords(t, "orders", 0, 100)
	c.deleteRecords(t, "orders", 1, 100)

	code, stdout, stderr := run(t, Options{SeedBrokers: []string{c.addr}, Group: "g"})
	assert.Equal(t, ExitLost, code, stderr)
	assert.Contains(t, stdout, "orders  0          50         150      50   0                no       50    -\n")
	assert.Contains(t, stdout, "orders/0: lost: 50 (offsets 50-99, retention, below the log start 100: seen by status)\n")
	assert.Contains(t, stdout, "orders/1: lost: 20 (offsets 10-29, retention, since 2026-01-01T11:00:00Z); 60 (offsets 40-99, retention, below the log start 100: seen by status)")
	assert.Contains(t, stdout, "group g: none of 2 partitions stalled; 2 of 2 lost records before delivery\n")

	code, stdout, stderr = run(t, Options{SeedBrokers: []string{c.addr}, Group: "g", Format: "json"})
	assert.Equal(t, ExitLost, code, stderr)
	var doc struct {
		Healthy    bool `json:"healthy"`
		Partitions []struct {
			Lag       int64           `json:"lag"`
			LogStart  int64           `json:"log_start"`
			Lost      json.RawMessage `json:"lost"`
			BelowLogS json.RawMessage `json:"lost_below_log_start"`
		} `json:"partitions"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc), stdout)
	assert.True(t, doc.Healthy, "a loss is not a stall: the partitions flow")
	require.Len(t, doc.Partitions, 2)
	assert.Equal(t, int64(50), doc.Partitions[0].Lag)
	assert.Equal(t, int64(100), doc.Partitions[0].LogStart)
	assert.JSONEq(t, `null`, string(doc.Partitions[0].Lost))
	assert.JSONEq(t, `{"first_offset": 50, "last_offset": 99, "count": 50, "log_start": 100, "cause": "retention"}`, string(doc.Partitions[0].BelowLogS))
	assert.JSONEq(t, `{"first_offset": 40, "last_offset": 99, "count": 60, "log_start": 100, "cause": "retention"}`, string(doc.Partitions[1].BelowLogS))
}
