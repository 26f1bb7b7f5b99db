package status

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// testReport is a report of each kind of partition, read 4m12.7s after
// testStall began.
func testReport() *Report {
	stall, loss, dead := testStall, testLoss, testDeadLetter
	return &Report{
		Group: "orders-to-http",
		At:    testStall.Since.Add(4*time.Minute + 12700*time.Millisecond),
		Partitions: []Partition{
			{Topic: "orders", Partition: 0, Committed: 100, LogEnd: 100, DeadLetter: &dead},
			{Topic: "orders", Partition: 1, Committed: 40, LogEnd: 100, DeliveredAbove: 15, Loss: &loss},
			{Topic: "orders", Partition: 2, Committed: 20, LogEnd: 100, DeliveredAbove: 10, Stall: &stall},
			{Topic: "orders", Partition: 3, Committed: -1, LogEnd: 7},
			{Topic: "other", Partition: 0, Committed: 5, LogEnd: 10, MetadataErr: errors.New("the metadata was written for offset 3")},
		},
	}
}

func TestWriteText(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteText(&b, testReport()))
	const want = `TOPIC   PARTITION  COMMITTED  LOG END  LAG  DELIVERED ABOVE  STALLED  LOST  DEAD-LETTERED
orders  0          100        100      0    0                no       -     4
orders  1          40         100      60   15               no       20    -
orders  2          20         100      80   10               yes      -     -
orders  3          -          7        -    0                no       -     -
other   0          5          10       5    0                no       -     -
orders/0: dead-lettered: 4 (offsets 30-39, http 400, since 2026-01-01T11:30:00Z)
orders/1: lost: 20 (offsets 10-29, retention, since 2026-01-01T11:00:00Z)
orders/2: stalled: offsets 20-29 for 4m12s (since 2026-01-01T12:00:00Z), 3 attempts, by watermark-connect@pod-7: http 503
other/0: commit metadata not used: the metadata was written for offset 3
group orders-to-http: 1 of 5 partitions stalled; 1 of 5 lost records before delivery; 1 of 5 dead-lettered records
`
	assert.Equal(t, want, b.String())

	for _, tc := range []struct {
		r    *Report
		want string
	}{
		{&Report{Group: "g", Partitions: []Partition{{Topic: "t", Committed: 3, LogEnd: 3}}}, "group g: healthy, none of 1 partition stalled\n"},
		{&Report{Group: "g"}, "group g: no partitions with commits\n"},
		// Records lost, nothing stalled: not called healthy.
		{&Report{Group: "g", Partitions: []Partition{{Topic: "t", Committed: 3, LogEnd: 3}, {Topic: "t", Partition: 1, Committed: 30, LogEnd: 30, Loss: &testLoss}}},
			"t      1          30         30       0    0                no       20    -\n" +
				"t/1: lost: 20 (offsets 10-29, retention, since 2026-01-01T11:00:00Z)\n" +
				"group g: none of 2 partitions stalled; 1 of 2 lost records before delivery\n"},
		// A stalled partition that lost records too: both on its row, a
		// line for each after the table.
		{&Report{Group: "g", At: testStall.Since.Add(time.Minute), Partitions: []Partition{{Topic: "t", Committed: 20, LogEnd: 30, Stall: &testStall, Loss: &testLoss}}},
			"t      0          20         30       10   0                yes      20    -\n" +
				"t/0: stalled: offsets 20-29 for 1m0s (since 2026-01-01T12:00:00Z), 3 attempts, by watermark-connect@pod-7: http 503\n" +
				"t/0: lost: 20 (offsets 10-29, retention, since 2026-01-01T11:00:00Z)\n" +
				"group g: 1 of 1 partition stalled; 1 of 1 lost records before delivery\n"},
		// Records dead-lettered, nothing stalled or lost: by design, still
		// healthy.
		{&Report{Group: "g", Partitions: []Partition{{Topic: "t", Committed: 3, LogEnd: 3, DeadLetter: &testDeadLetter}}},
			"t      0          3          3        0    0                no       -     4\n" +
				"t/0: dead-lettered: 4 (offsets 30-39, http 400, since 2026-01-01T11:30:00Z)\n" +
				"group g: healthy, none of 1 partition stalled; 1 of 1 dead-lettered records\n"},
		// Every report on one row; a report without an error class.
		{&Report{Group: "g", At: testStall.Since.Add(time.Minute), Partitions: []Partition{{Topic: "t", Committed: 20, LogEnd: 30, Stall: &testStall, Loss: &testLoss,
			DeadLetter: &commitmeta.DeadLetter{Report: commitmeta.Report{First: 30, Last: 39, Since: testDeadLetter.Since}, Count: 4}}}},
			"yes      20    4\n" +
				"t/0: stalled: offsets 20-29 for 1m0s (since 2026-01-01T12:00:00Z), 3 attempts, by watermark-connect@pod-7: http 503\n" +
				"t/0: lost: 20 (offsets 10-29, retention, since 2026-01-01T11:00:00Z)\n" +
				"t/0: dead-lettered: 4 (offsets 30-39, since 2026-01-01T11:30:00Z)\n" +
				"group g: 1 of 1 partition stalled; 1 of 1 lost records before delivery; 1 of 1 dead-lettered records\n"},
		// LOST counts the commit's report and what status sees below the
		// log start together; the line tells them apart.
		{&Report{Group: "g", Partitions: []Partition{{Topic: "t", Committed: 40, LogEnd: 150, LogStart: 100, Loss: &testLoss,
			BelowStart: &GoneBelowStart{First: 40, Last: 99, Count: 60, LogStart: 100}}}},
			"no       80    -\n" +
				"t/0: lost: 20 (offsets 10-29, retention, since 2026-01-01T11:00:00Z); 60 (offsets 40-99, retention, below the log start 100: seen by status)\n"},
	} {
		b.Reset()
		require.NoError(t, WriteText(&b, tc.r))
		assert.Contains(t, b.String(), tc.want)
	}
}

// Issue 30: a stall's error class, the sink's own message, is often
// hundreds of characters long. In the STALLED cell it set the column's
// width, so every other row of the table was padded with spaces to it:
// about 300 columns in a file or a pipe, where nothing wraps the lines. The
// table now holds short cells only, each column as wide as its widest
// short cell, and a report's long text is on a line of its own.
func TestWriteTextPadsNoRowToALongCell(t *testing.T) {
	long := testStall
	long.Reason = "httpclient.ErrUnexpectedHTTPRes status=503: HTTP request returned unexpected response code (503): 503 Service Unavailable from downstream, retry later"
	dead := testDeadLetter
	dead.Reason = long.Reason
	r := &Report{Group: "g", At: long.Since.Add(time.Minute), Partitions: []Partition{
		{Topic: "orders", Partition: 0, Committed: 10, LogEnd: 10},
		{Topic: "orders", Partition: 1, Committed: 20, LogEnd: 30, Stall: &long, Loss: &testLoss, DeadLetter: &dead},
		{Topic: "orders", Partition: 2, Committed: 10, LogEnd: 10},
	}}
	var b bytes.Buffer
	require.NoError(t, WriteText(&b, r))
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	require.Greater(t, len(lines), len(r.Partitions), b.String())
	header := lines[0]
	assert.Equal(t, "TOPIC   PARTITION  COMMITTED  LOG END  LAG  DELIVERED ABOVE  STALLED  LOST  DEAD-LETTERED", header, "each column as wide as its title or its widest short cell")
	for _, line := range lines[1 : len(r.Partitions)+1] {
		assert.LessOrEqual(t, len(line), len(header), "a row is no wider than the header: %q", line)
		assert.Equal(t, strings.TrimRight(line, " "), line, "no trailing spaces: %q", line)
	}
	assert.Contains(t, b.String(), "orders/1: stalled: offsets 20-29 for 1m0s (since 2026-01-01T12:00:00Z), 3 attempts, by watermark-connect@pod-7: "+long.Reason+"\n")
}

// TestWriteJSON pins the document: its keys are what monitoring reads.
func TestWriteJSON(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteJSON(&b, testReport()))
	const want = `{
  "group": "orders-to-http",
  "healthy": false,
  "partitions": [
    {
      "topic": "orders",
      "partition": 0,
      "committed": 100,
      "log_end": 100,
      "lag": 0,
      "delivered_above": 0,
      "stalled": false,
      "stall": null,
      "lost": null,
      "dead_lettered": {
        "first_offset": 30,
        "last_offset": 39,
        "count": 4,
        "since": "2026-01-01T11:30:00.000Z",
        "error": "http 400"
      },
      "log_start": 0,
      "lost_below_log_start": null,
      "not_consumed": false
    },
    {
      "topic": "orders",
      "partition": 1,
      "committed": 40,
      "log_end": 100,
      "lag": 60,
      "delivered_above": 15,
      "stalled": false,
      "stall": null,
      "lost": {
        "first_offset": 10,
        "last_offset": 29,
        "count": 20,
        "since": "2026-01-01T11:00:00.000Z",
        "cause": "retention"
      },
      "dead_lettered": null,
      "log_start": 0,
      "lost_below_log_start": null,
      "not_consumed": false
    },
    {
      "topic": "orders",
      "partition": 2,
      "committed": 20,
      "log_end": 100,
      "lag": 80,
      "delivered_above": 10,
      "stalled": true,
      "stall": {
        "first_offset": 20,
        "last_offset": 29,
        "since": "2026-01-01T12:00:00.000Z",
        "age_s": 252,
        "attempts": 3,
        "reason": "http 503",
        "member": "watermark-connect@pod-7",
        "mark_only": false
      },
      "lost": null,
      "dead_lettered": null,
      "log_start": 0,
      "lost_below_log_start": null,
      "not_consumed": false
    },
    {
      "topic": "orders",
      "partition": 3,
      "committed": null,
      "log_end": 7,
      "lag": null,
      "delivered_above": 0,
      "stalled": false,
      "stall": null,
      "lost": null,
      "dead_lettered": null,
      "log_start": 0,
      "lost_below_log_start": null,
      "not_consumed": false
    },
    {
      "topic": "other",
      "partition": 0,
      "committed": 5,
      "log_end": 10,
      "lag": 5,
      "delivered_above": 0,
      "stalled": false,
      "stall": null,
      "lost": null,
      "dead_lettered": null,
      "metadata_error": "the metadata was written for offset 3",
      "log_start": 0,
      "lost_below_log_start": null,
      "not_consumed": false
    }
  ]
}
`
	assert.Equal(t, want, b.String())

	// The keys as a consumer decodes them, and since as RFC 3339.
	var doc struct {
		Partitions []map[string]json.RawMessage `json:"partitions"`
	}
	require.NoError(t, json.Unmarshal(b.Bytes(), &doc))
	var stall map[string]any
	require.NoError(t, json.Unmarshal(doc.Partitions[2]["stall"], &stall))
	since, err := time.Parse(time.RFC3339, stall["since"].(string))
	require.NoError(t, err)
	assert.True(t, since.Equal(testStall.Since))
	var lost map[string]any
	require.NoError(t, json.Unmarshal(doc.Partitions[1]["lost"], &lost))
	assert.Equal(t, map[string]any{"first_offset": 10.0, "last_offset": 29.0, "count": 20.0,
		"since": "2026-01-01T11:00:00.000Z", "cause": "retention"}, lost, "the keys of lost")
	since, err = time.Parse(time.RFC3339, lost["since"].(string))
	require.NoError(t, err)
	assert.True(t, since.Equal(testLoss.Since))
	assert.Equal(t, "null", string(doc.Partitions[0]["lost"]), "lost is null without a loss")
	var dead map[string]any
	require.NoError(t, json.Unmarshal(doc.Partitions[0]["dead_lettered"], &dead))
	assert.Equal(t, map[string]any{"first_offset": 30.0, "last_offset": 39.0, "count": 4.0,
		"since": "2026-01-01T11:30:00.000Z", "error": "http 400"}, dead, "the keys of dead_lettered")
	since, err = time.Parse(time.RFC3339, dead["since"].(string))
	require.NoError(t, err)
	assert.True(t, since.Equal(testDeadLetter.Since))
	assert.Equal(t, "null", string(doc.Partitions[1]["dead_lettered"]), "dead_lettered is null without a report")

	// healthy is about stalls only: a group that lost records and flows
	// is healthy in the JSON (its exit status is ExitLost).
	b.Reset()
	require.NoError(t, WriteJSON(&b, &Report{Group: "g", Partitions: []Partition{{Topic: "t", Committed: 30, LogEnd: 30, Loss: &testLoss}}}))
	var healthy struct {
		Healthy bool `json:"healthy"`
	}
	require.NoError(t, json.Unmarshal(b.Bytes(), &healthy))
	assert.True(t, healthy.Healthy)

	// An empty report has an empty list, not null.
	b.Reset()
	require.NoError(t, WriteJSON(&b, &Report{Group: "g"}))
	assert.JSONEq(t, `{"group": "g", "healthy": true, "partitions": []}`, b.String())
}

// A stall whose start is after the report's time (the writer's clock ahead
// of the reader's) has age 0, not a negative one.
func TestStallAgeClockSkew(t *testing.T) {
	assert.Equal(t, time.Duration(0), stallAge(testStall.Since, testStall.Since.Add(time.Minute)))
	assert.Equal(t, 61*time.Second, stallAge(testStall.Since.Add(61500*time.Millisecond), testStall.Since))
}
