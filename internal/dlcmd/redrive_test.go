package dlcmd

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/deadletter"
	"github.com/watermark-connect/watermark-connect/internal/status"
)

// summary is "key redriven_from original_timestamp" per record, to compare
// what reached a topic; the timestamp is HeaderOriginalTimestampMs's, or
// the record's without it (TestRedriveTimestamps checks the records').
func summary(rs []*kgo.Record) []string {
	var out []string
	for _, r := range rs {
		var from string
		ts := r.Timestamp
		for _, h := range r.Headers {
			switch {
			case h.Key == deadletter.HeaderRedrivenFrom:
				from = string(h.Value)
			case h.Key == HeaderOriginalTimestampMs:
				ms, err := strconv.ParseInt(string(h.Value), 10, 64)
				if err != nil {
					from = "BAD " + h.Key
				}
				ts = time.UnixMilli(ms)
			case strings.HasPrefix(h.Key, deadletter.Prefix):
				from = "PROVENANCE LEFT: " + h.Key
			}
			if strings.HasPrefix(from, "PROVENANCE") || strings.HasPrefix(from, "BAD") {
				break
			}
		}
		out = append(out, fmt.Sprintf("%s %s %s", r.Key, from, ts.UTC().Format(time.TimeOnly)))
	}
	return out
}

// Bug (issue 29): redriven records kept their original timestamps, so a
// destination with short time retention deleted them at once. They now get
// the time of the redrive, the old one in HeaderOriginalTimestampMs;
// --keep-timestamps keeps it, and adds no header.
func TestRedriveTimestamps(t *testing.T) {
	c := seed(t)
	before := time.Now().Truncate(time.Millisecond)
	code, _, stderr := runCLI(t, "redrive", "--seed-brokers", c.addr, "--dead-letter-topic", "orders.dlq", "--partition", "0", "--to-offset", "0")
	require.Equal(t, ExitOK, code, stderr)
	after := time.Now()
	got := c.read(t, "orders")
	require.Len(t, got, 1)
	r := got[0]
	assert.False(t, r.Timestamp.Before(before) || r.Timestamp.After(after), "timestamp %v, want the time of the redrive, within [%v, %v]", r.Timestamp, before, after)
	assert.Equal(t, []kgo.RecordHeader{
		{Key: "trace", Value: []byte("t")},
		{Key: deadletter.HeaderRedrivenFrom, Value: []byte("orders.dlq/0/0")},
		{Key: HeaderOriginalTimestampMs, Value: []byte(strconv.FormatInt(t0.Add(time.Minute).UnixMilli(), 10))},
	}, r.Headers)

	code, _, stderr = runCLI(t, "redrive", "--seed-brokers", c.addr, "--dead-letter-topic", "orders.dlq", "--partition", "0", "--to-offset", "0", "--to", "retry", "--keep-timestamps")
	require.Equal(t, ExitOK, code, stderr)
	got = c.read(t, "retry")
	require.Len(t, got, 1)
	assert.Equal(t, t0.Add(time.Minute), got[0].Timestamp.UTC(), "--keep-timestamps")
	assert.Equal(t, []kgo.RecordHeader{
		{Key: "trace", Value: []byte("t")},
		{Key: deadletter.HeaderRedrivenFrom, Value: []byte("orders.dlq/0/0")},
	}, got[0].Headers, "--keep-timestamps adds no header")
}

func TestRedriveByOffsetToOrigin(t *testing.T) {
	c := seed(t)
	code, stdout, stderr := runCLI(t, "redrive", "--seed-brokers", c.addr, "--dead-letter-topic", "orders.dlq",
		"--partition", "0", "--from-offset", "1", "--to-offset", "2")
	require.Equal(t, ExitOK, code, stderr)
	assert.Equal(t, "redrove 2 of 2 selected records from orders.dlq\norders: 2 records from orders.dlq partition 0 offsets 1-2\n", stdout)
	got := c.read(t, "orders")
	// Keyed records go where the partitioner puts them: compare as sets.
	assert.ElementsMatch(t, []string{"k10 orders.dlq/0/1 12:00:00", "k12 orders.dlq/0/2 12:02:00"}, summary(got))
	assert.Equal(t, "t", string(got[0].Headers[0].Value), "the origin's own headers go along")
	assert.Empty(t, c.read(t, "payments"))
}

func TestRedriveByTime(t *testing.T) {
	c := seed(t)
	// Origin timestamps 12:00, 12:01, 12:02 (partition 0), 12:30 and 13:30
	// (partition 1); the unparsable record is in partition 1, which a time
	// range cannot place: select partition 0 only.
	code, stdout, stderr := runCLI(t, "redrive", "--seed-brokers", c.addr, "--dead-letter-topic", "orders.dlq",
		"--partition", "0", "--from-time", "2026-03-01T12:01:00Z", "--to-time", "2026-03-01T12:02:00Z")
	require.Equal(t, ExitOK, code, stderr)
	assert.Equal(t, "redrove 1 of 1 selected record from orders.dlq\norders: 1 record from orders.dlq partition 0 offset 0\n", stdout, "from inclusive, to exclusive")
	assert.Equal(t, []string{"k11 orders.dlq/0/0 12:01:00"}, summary(c.read(t, "orders")))

	// Over both partitions, the unparsable record fails the run, and
	// nothing is produced.
	code, stdout, stderr = runCLI(t, "redrive", "--seed-brokers", c.addr, "--dead-letter-topic", "orders.dlq",
		"--from-time", "2026-03-01T13:00:00Z")
	assert.Equal(t, ExitFailed, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "nothing produced: unparsable orders.dlq/1@2, so its origin timestamp (select it by offset) is unknown: header dead_letter_partition: missing")
	assert.Empty(t, c.read(t, "payments"))
}

func TestRedriveTo(t *testing.T) {
	c := seed(t)
	// With --to and no time range the provenance is not needed: the
	// unparsable record goes along, as it is.
	code, stdout, stderr := runCLI(t, "redrive", "--seed-brokers", c.addr, "--dead-letter-topic", "orders.dlq",
		"--partition", "1", "--to", "retry")
	require.Equal(t, ExitOK, code, stderr)
	assert.Equal(t, "redrove 3 of 3 selected records from orders.dlq\nretry: 3 records from orders.dlq partition 1 offsets 0-2\n", stdout)
	got := c.read(t, "retry")
	assert.ElementsMatch(t, []string{"k5 orders.dlq/1/0 12:30:00", "k7 orders.dlq/1/1 13:30:00", " orders.dlq/1/2 12:00:00"}, summary(got))
}

func TestRedriveUnparsableWithoutTo(t *testing.T) {
	c := seed(t)
	code, stdout, stderr := runCLI(t, "redrive", "--seed-brokers", c.addr, "--dead-letter-topic", "orders.dlq")
	assert.Equal(t, ExitFailed, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "dead-letter redrive: nothing produced: unparsable orders.dlq/1@2, so its origin topic (give --to) is unknown")
	assert.Empty(t, c.read(t, "orders"), "nothing is produced when one record cannot be placed")

	// Selected around it, the rest goes to each origin topic.
	code, stdout, stderr = runCLI(t, "redrive", "--seed-brokers", c.addr, "--dead-letter-topic", "orders.dlq", "--to-offset", "1")
	require.Equal(t, ExitOK, code, stderr)
	assert.Equal(t, "redrove 4 of 4 selected records from orders.dlq\n"+
		"orders: 3 records from orders.dlq partition 0 offsets 0-1, partition 1 offset 0\n"+
		"payments: 1 record from orders.dlq partition 1 offset 1\n", stdout)
	assert.Len(t, c.read(t, "payments"), 1)
}

func TestRedriveFailures(t *testing.T) {
	c := seed(t)
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"missing destination", []string{"--partition", "0", "--to", "nosuch", "--timeout", "10s"}, ExitFailed,
			"redrove 0 of 3 selected records from orders.dlq\n", "orders.dlq/0@0 to nosuch: UNKNOWN_TOPIC_OR_PARTITION"},
		{"back to itself", []string{"--partition", "0", "--to", "orders.dlq"}, ExitFailed,
			"", "orders.dlq/0@0 would go back to the dead-letter topic orders.dlq itself"},
		{"bad range", []string{"--from-offset", "5", "--to-offset", "4", "--from-time", "2026-03-01T13:00:00Z", "--to-time", "2026-03-01T12:00:00Z"}, ExitFailed,
			"", "--from-offset (5) must be at most --to-offset (4)\n--from-time (2026-03-01T13:00:00.000Z) must be before --to-time (2026-03-01T12:00:00.000Z)"},
		{"bad time", []string{"--from-time", "yesterday"}, status.ExitUsage, "", `--from-time ("yesterday") must be an RFC 3339 time`},
		{"no such partition", []string{"--partition", "7"}, ExitFailed, "", "--partition 7: the dead-letter topic has partitions 0 to 1"},
	} {
		args := append([]string{"redrive", "--seed-brokers", c.addr, "--dead-letter-topic", "orders.dlq"}, tc.args...)
		code, stdout, stderr := runCLI(t, args...)
		assert.Equal(t, tc.code, code, "%s: exit status; stderr: %s", tc.name, stderr)
		assert.Equal(t, tc.stdout, stdout, tc.name)
		assert.Contains(t, stderr, tc.stderr, tc.name)
	}
}

// The first batch goes through, the second fails: exit 2, stdout says what
// moved and stderr what failed.
func TestRedrivePartial(t *testing.T) {
	c := seed(t)
	_, err := kadm.NewClient(c.cl).DeleteTopic(ctxFor(t), "payments")
	require.NoError(t, err)

	// Partition 1: offset 0 goes to orders, offset 1 to payments.
	code, stdout, stderr := runCLI(t, "redrive", "--seed-brokers", c.addr, "--dead-letter-topic", "orders.dlq",
		"--partition", "1", "--to-offset", "1", "--batch-size", "1", "--timeout", "10s")
	assert.Equal(t, ExitPartial, code, stderr)
	assert.Equal(t, "redrove 1 of 2 selected records from orders.dlq\norders: 1 record from orders.dlq partition 1 offset 0\n", stdout)
	assert.Contains(t, stderr, "dead-letter redrive: orders.dlq/1@1 to payments: UNKNOWN_TOPIC_OR_PARTITION")
	assert.Equal(t, []string{"k5 orders.dlq/1/0 12:30:00"}, summary(c.read(t, "orders")))

	// Records go in dead-letter partition and offset order; the batches
	// after a failing one are not tried.
	_, err = kadm.NewClient(c.cl).DeleteTopic(ctxFor(t), "orders")
	require.NoError(t, err)
	code, stdout, stderr = runCLI(t, "redrive", "--seed-brokers", c.addr, "--dead-letter-topic", "orders.dlq",
		"--to-offset", "1", "--batch-size", "1", "--timeout", "10s")
	assert.Equal(t, ExitFailed, code, stderr)
	assert.Equal(t, "redrove 0 of 4 selected records from orders.dlq\n", stdout)
	assert.Contains(t, stderr, "orders.dlq/0@0 to orders: UNKNOWN_TOPIC_OR_PARTITION")
	assert.Contains(t, stderr, "\n3 records not tried:\n"+
		"  orders: 2 records from orders.dlq partition 0 offset 1, partition 1 offset 0\n"+
		"  payments: 1 record from orders.dlq partition 1 offset 1\n")
}

// Bug (issue 29): produce matched ProduceSync's results to records by
// position, but kgo returns them in the order they finish. With dead
// letters of two origin topics interleaved and one topic deleted, redrive
// said the deleted topic's records were moved and named records that had
// arrived as failed.
func TestRedriveNamesEachRecordsOutcome(t *testing.T) {
	c := newCluster(t, kfake.SeedTopics(1, "orders.dlq", "orders", "payments"))
	c.produce(t,
		letter(0, "payments", 0, 1, t0, 1, "timeout"),
		letter(0, "orders", 0, 2, t0, 1, "timeout"),
		letter(0, "payments", 0, 3, t0, 1, "timeout"),
		letter(0, "orders", 0, 4, t0, 1, "timeout"),
	)
	_, err := kadm.NewClient(c.cl).DeleteTopic(ctxFor(t), "payments")
	require.NoError(t, err)

	code, stdout, stderr := runCLI(t, "redrive", "--seed-brokers", c.addr, "--dead-letter-topic", "orders.dlq", "--timeout", "10s")
	assert.Equal(t, ExitPartial, code, stderr)
	assert.Equal(t, "redrove 2 of 4 selected records from orders.dlq\norders: 2 records from orders.dlq partition 0 offsets 1-3\n", stdout)
	assert.Contains(t, stderr, "orders.dlq/0@0 to payments: UNKNOWN_TOPIC_OR_PARTITION")
	assert.Contains(t, stderr, "orders.dlq/0@2 to payments: UNKNOWN_TOPIC_OR_PARTITION")
	assert.NotContains(t, stderr, "to orders:")
	assert.ElementsMatch(t, []string{"k2 orders.dlq/0/1 12:00:00", "k4 orders.dlq/0/3 12:00:00"}, summary(c.read(t, "orders")))
}

// Bug (issue 29): a range partly below the log start (asked 0-2, the log
// starts at 2) was narrowed without a word. It now fails, naming the
// missing offsets, with nothing produced, unless --allow-partial.
func TestRedrivePartlyGoneRange(t *testing.T) {
	c := seed(t)
	var o kadm.Offsets
	o.Add(kadm.Offset{Topic: "orders.dlq", Partition: 0, At: 2})
	o.Add(kadm.Offset{Topic: "orders.dlq", Partition: 1, At: 1})
	res, err := kadm.NewClient(c.cl).DeleteRecords(ctxFor(t), o)
	require.NoError(t, err)
	require.NoError(t, res.Error())

	args := []string{"redrive", "--seed-brokers", c.addr, "--dead-letter-topic", "orders.dlq", "--from-offset", "0", "--to-offset", "2", "--to", "retry"}
	code, stdout, stderr := runCLI(t, args...)
	assert.Equal(t, ExitFailed, code, stderr)
	assert.Empty(t, stdout)
	assert.Equal(t, "dead-letter redrive: nothing produced: the selected range is partly gone from the dead-letter topic: "+
		"partition 0 offsets 0-1 (its log starts at 2), partition 1 offset 0 (its log starts at 1); give --allow-partial to redrive what is left\n", stderr)
	assert.Empty(t, c.read(t, "retry"))

	code, stdout, stderr = runCLI(t, append(args, "--allow-partial")...)
	assert.Equal(t, ExitOK, code, stderr)
	assert.Equal(t, "redrove 3 of 3 selected records from orders.dlq\nretry: 3 records from orders.dlq partition 0 offset 2, partition 1 offsets 1-2\n", stdout)
	assert.Equal(t, "dead-letter redrive: the selected range is partly gone from the dead-letter topic: "+
		"partition 0 offsets 0-1 (its log starts at 2), partition 1 offset 0 (its log starts at 1); redriving what is left (--allow-partial)\n", stderr)
	assert.Len(t, c.read(t, "retry"), 3)

	// A range within what is left needs no flag.
	code, _, stderr = runCLI(t, "redrive", "--seed-brokers", c.addr, "--dead-letter-topic", "orders.dlq", "--partition", "0", "--from-offset", "2", "--to", "retry")
	assert.Equal(t, ExitOK, code, stderr)
	assert.Empty(t, stderr)
}

// Bug (issue 29): --partition -4294967296 wrapped to partition 0 (int to
// int32) and redrove it. Out-of-range values are refused, naming the flag,
// the value and the limits, with nothing read.
func TestRedriveOutOfRangeFlags(t *testing.T) {
	c := seed(t)
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"--partition", "-4294967296"}, "dead-letter redrive: --partition (-4294967296) must be between 0 and 2147483647\n"},
		{[]string{"--partition", "4294967296"}, "dead-letter redrive: --partition (4294967296) must be between 0 and 2147483647\n"},
		{[]string{"--partition", "-1"}, "dead-letter redrive: --partition (-1) must be between 0 and 2147483647\n"},
		{[]string{"--batch-size", "0"}, "dead-letter redrive: --batch-size (0) must be at least 1\n"},
	} {
		args := append([]string{"redrive", "--seed-brokers", c.addr, "--dead-letter-topic", "orders.dlq", "--to", "retry"}, tc.args...)
		code, stdout, stderr := runCLI(t, args...)
		assert.Equal(t, status.ExitUsage, code, "%v: exit status; stderr: %s", tc.args, stderr)
		assert.Empty(t, stdout, tc.args)
		assert.Equal(t, tc.stderr, stderr, tc.args)
	}
	assert.Empty(t, c.read(t, "retry"))
}

// A kafka_share input's dead letter carries a ninth header,
// dead_letter_share_group: inspect reads it as any dead letter, and
// redrive drops it with the rest of the dead_letter_ namespace.
func TestShareGroupLetter(t *testing.T) {
	c := newCluster(t, kfakeTopics(1, "orders.dlq", "orders"))
	origin := &kgo.Record{Topic: "orders", Offset: 9, Timestamp: t0, Key: []byte("k9"), Value: []byte("v9"),
		Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("t")}}}
	l := deadletter.Letter(origin, "orders.dlq", deadletter.Failure{Attempts: 5, Error: "timeout", FirstFailed: t0, Member: "wm@pod-1", ShareGroup: "workers"})
	require.Equal(t, deadletter.HeaderShareGroup, l.Headers[len(l.Headers)-1].Key)
	c.produce(t, l)

	code, stdout, stderr := runCLI(t, "inspect", "--seed-brokers", c.addr, "--dead-letter-topic", "orders.dlq")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stdout, "dead-letter topic orders.dlq: 1 record in 1 partition: 1 from 1 origin partition, 0 unparsable\n")

	code, _, stderr = runCLI(t, "redrive", "--seed-brokers", c.addr, "--dead-letter-topic", "orders.dlq")
	require.Equal(t, ExitOK, code, stderr)
	got := c.read(t, "orders")
	require.Len(t, got, 1)
	assert.Equal(t, []string{"k9 orders.dlq/0/0 " + t0.UTC().Format(time.TimeOnly)}, summary(got), "no provenance left, the share group's included")
}
