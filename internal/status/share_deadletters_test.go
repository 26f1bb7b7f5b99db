package status

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/deadletter"
	"github.com/watermark-connect/watermark-connect/internal/dlscan"
	"github.com/watermark-connect/watermark-connect/plugin"
)

// dlCluster is a kfake cluster with a dead-letter topic "dlq" of two
// partitions and a client that produces to it and reads it as status does.
type dlCluster struct {
	addr string
	cl   *kgo.Client
	ctx  context.Context
}

func newDLCluster(t *testing.T) *dlCluster {
	t.Helper()
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "dlq"), kfake.SeedTopics(1, "orders"))
	require.NoError(t, err)
	t.Cleanup(kc.Close)
	addr := kc.ListenAddrs()[0]
	cl, err := kgo.NewClient(append(dlscan.Opts(), kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return &dlCluster{addr: addr, cl: cl, ctx: ctx}
}

// letter is the dead letter a kafka_share input of group writes (group
// "" is kafka_watermark's) for orders/partition@offset, a record produced
// at produced, whose last failure was at failed; it goes to partition dlp
// of dlq.
func letter(group string, dlp int32, offset int64, produced, failed time.Time, class string) *kgo.Record {
	origin := &kgo.Record{Topic: "orders", Partition: 0, Offset: offset, Timestamp: produced, Value: []byte("v")}
	l := deadletter.Letter(origin, "dlq", deadletter.Failure{Attempts: 3, Error: class, FirstFailed: failed, Member: "wc@pod", ShareGroup: group})
	l.Partition = dlp
	return l
}

func (c *dlCluster) produce(t *testing.T, rs ...*kgo.Record) {
	t.Helper()
	require.NoError(t, c.cl.ProduceSync(c.ctx, rs...).FirstErr())
}

// The report counts the group's dead letters written within the window,
// whoever else writes to the topic: another share group's letters,
// kafka_watermark's (no share group header) and records that are no dead
// letters are read and left out; a record that names the group and does
// not parse is reported, not counted; the last is the latest written.
func TestShareDeadLettersReport(t *testing.T) {
	c := newDLCluster(t)
	now := time.Now().Truncate(time.Millisecond)
	old := now.Add(-48 * time.Hour)
	c.produce(t,
		// Partition 0: two of the group's before the window (excluded), one
		// of a record produced three days ago and dead-lettered 5 minutes
		// ago (its timestamp is the origin's: counted all the same), then
		// the window's.
		letter("workers", 0, 1, old, old, "old"),
		letter("workers", 0, 2, old, old.Add(time.Minute), "old"),
		letter("workers", 0, 3, now.Add(-72*time.Hour), now.Add(-5*time.Minute), "backlog"),
		letter("workers", 0, 4, now.Add(-2*time.Hour), now.Add(-time.Hour), "http: status=503"),
		letter("other", 0, 5, now.Add(-time.Hour), now.Add(-time.Minute), "other's"),
		letter("", 0, 6, now.Add(-time.Hour), now.Add(-time.Minute), "kafka_watermark's"),
		// Partition 1: the latest of the group, junk, and one that names the
		// group with a bad offset.
		letter("workers", 1, 7, now.Add(-time.Hour), now.Add(-2*time.Minute), "timeout"),
		&kgo.Record{Topic: "dlq", Partition: 1, Value: []byte("junk"), Timestamp: now},
		func() *kgo.Record {
			l := letter("workers", 1, 8, now, now, "x")
			for i, h := range l.Headers {
				if h.Key == deadletter.HeaderOffset {
					l.Headers[i].Value = []byte("eight")
				}
			}
			return l
		}(),
		letter("workers", 1, 9, now.Add(-time.Hour), now.Add(-90*time.Second), "timeout"),
	)

	d := CollectShareDeadLetters(c.ctx, c.cl, "workers", "dlq", 24*time.Hour, now)
	require.NoError(t, d.Err)
	assert.Equal(t, 4, d.Count, "the window's letters of workers: offsets 3, 4, 7, 9")
	assert.True(t, d.Complete())
	assert.Equal(t, now.Add(-time.Hour).UTC(), d.Since, "the earliest written")
	require.NotNil(t, d.Last)
	assert.Equal(t, ShareDeadLetter{Topic: "orders", Partition: 0, Offset: 9, At: now.Add(-90 * time.Second).UTC(), Error: "timeout",
		DeadLetterPartition: 1, DeadLetterOffset: 3}, *d.Last)
	assert.Equal(t, 1, d.Malformed)
	assert.Equal(t, `dlq/1@2: header dead_letter_offset: invalid value "eight": want a decimal offset >= 0`, d.MalformedErr)
	assert.Equal(t, "4 in the last 24h to dlq, the last orders/0@9 at "+FormatTime(now.Add(-90*time.Second), time.RFC3339)+": timeout", d.line())

	other := CollectShareDeadLetters(c.ctx, c.cl, "other", "dlq", time.Hour, now)
	assert.Equal(t, 1, other.Count, "the other group's, in a topic shared with workers and kafka_watermark")
	assert.Equal(t, "other's", other.Last.Error)
	assert.Zero(t, other.Malformed, "workers' malformed record is not other's")

	short := CollectShareDeadLetters(c.ctx, c.cl, "workers", "dlq", 3*time.Minute, now)
	assert.Equal(t, 2, short.Count, "within 3m: offsets 7 and 9 (3, dead-lettered 5m ago, is out)")
	assert.Equal(t, "2 in the last 3m to dlq, the last orders/0@9 at "+FormatTime(now.Add(-90*time.Second), time.RFC3339)+": timeout", short.line())

	missing := CollectShareDeadLetters(c.ctx, c.cl, "workers", "nope", time.Hour, now)
	assert.True(t, missing.Missing)
	assert.NoError(t, missing.Err)
	assert.Equal(t, "0 in the last 1h to nope (no such topic)", missing.line())
}

// The read is bounded: a partition is read from the window's first record
// by timestamp less the tail, never more than its last records.records
// records, and never more than bytes in all; a count past a bound says so
// ("at least"), and the last is still the latest when the oldest were cut.
func TestShareDeadLettersBounded(t *testing.T) {
	c := newDLCluster(t)
	now := time.Now().Truncate(time.Millisecond)
	old := now.Add(-48 * time.Hour)
	var rs []*kgo.Record
	for i := range 30 { // 30 old ones, then 10 in the window
		rs = append(rs, letter("workers", 0, int64(i), old, old, "old"))
	}
	for i := range 10 {
		at := now.Add(-time.Duration(10-i) * time.Minute)
		rs = append(rs, letter("workers", 0, int64(30+i), at, at, "new"))
	}
	c.produce(t, rs...)

	// The window starts at offset 30; the tail of 2 reads 28 and 29 too.
	d := collectShareDeadLetters(c.ctx, c.cl, "workers", "dlq", time.Hour, now, shareDLLimits{records: 100, tail: 2, bytes: 1 << 30})
	assert.Equal(t, 10, d.Count)
	assert.True(t, d.Complete())
	assert.Equal(t, int64(12), d.Read, "records read: the window's 10 and the tail's 2, not the 30 before")

	// At most 4 records of a partition: the 4 latest.
	d = collectShareDeadLetters(c.ctx, c.cl, "workers", "dlq", time.Hour, now, shareDLLimits{records: 4, tail: 2, bytes: 1 << 30})
	assert.Equal(t, 4, d.Count)
	assert.Equal(t, int64(4), d.Read)
	assert.False(t, d.Complete())
	assert.Equal(t, int64(39), d.Last.Offset, "the latest is read")
	assert.Contains(t, d.line(), "at least 4 in the last 1h to dlq (the read stopped at the last 4 records of a partition), the last orders/0@39")

	// The bytes: the read stops once they are reached.
	one := recordBytes(rs[0])
	d = collectShareDeadLetters(c.ctx, c.cl, "workers", "dlq", time.Hour, now, shareDLLimits{records: 100, tail: 0, bytes: 3 * one})
	assert.Equal(t, 3, d.Count)
	assert.Equal(t, int64(3), d.Read)
	assert.Equal(t, fmt.Sprintf("its cap of %d bytes (%d read; the latest letters may be unread)", 3*one, 3*one+3), d.Capped)
	assert.Contains(t, d.line(), "at least 3 in the last 1h to dlq (the read stopped at ")

	// The real bounds are stated in the usage text and the README.
	require.Equal(t, shareDLLimits{records: 10_000, tail: 1_000, bytes: 32 << 20}, defaultShareDLLimits)
}

// status --share-group with -c reads the kafka_share input's dead_letter
// block: the line and the JSON key, exit status 0 (dead letters are by
// design, as kafka_watermark's); report_for 0s does not look; a flag names
// the topic without -c; an interpolated topic needs the flag.
func TestStatusShareDeadLetters(t *testing.T) {
	c := newDLCluster(t)
	now := time.Now().Truncate(time.Millisecond)
	c.produce(t,
		letter("workers", 0, 41, now.Add(-time.Hour), now.Add(-time.Minute), "http: status=400"),
		letter("workers", 1, 40, now.Add(-time.Hour), now.Add(-2*time.Minute), "http: status=400"))
	share(t, c.addr, "workers", "orders")

	conf := func(deadLetter string) string {
		p := filepath.Join(t.TempDir(), "share.yaml")
		require.NoError(t, os.WriteFile(p, []byte("input:\n  kafka_share:\n    seed_brokers: [ "+c.addr+" ]\n    topics: [ orders ]\n    share_group: workers\n"+
			"    dead_letter: "+deadLetter+"\noutput:\n  drop: {}\n"), 0o600))
		return p
	}
	run := func(o Options) (int, string, string) {
		var out, errOut bytes.Buffer
		o.Timeout, o.ShareGroup = 10*time.Second, "workers"
		code := Run(c.ctx, o, &out, &errOut)
		return code, out.String(), errOut.String()
	}

	code, out, errOut := run(Options{ConfigPath: conf("{ topic: dlq, report_for: 1h }")})
	require.Equal(t, ExitHealthy, code, errOut)
	assert.Contains(t, out, "\ndead-lettered: 2 in the last 1h to dlq, the last orders/0@41 at "+FormatTime(now.Add(-time.Minute), time.RFC3339)+": http: status=400\n")

	code, out, errOut = run(Options{ConfigPath: conf("{ topic: dlq }"), Format: "json"})
	require.Equal(t, ExitHealthy, code, errOut)
	var doc struct {
		DeadLettered map[string]any `json:"dead_lettered"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	assert.Equal(t, map[string]any{
		"topic": "dlq", "report_for_s": 86400.0, "count": 2.0, "complete": true,
		"since": FormatTime(now.Add(-2*time.Minute), sinceJSON), "error": "http: status=400",
		"last": map[string]any{"topic": "orders", "partition": 0.0, "offset": 41.0, "time": FormatTime(now.Add(-time.Minute), sinceJSON),
			"error": "http: status=400", "dead_letter_partition": 0.0, "dead_letter_offset": 0.0},
		"topic_missing": false, "malformed": 0.0, "records_read": 2.0,
	}, doc.DeadLettered)

	code, out, errOut = run(Options{ConfigPath: conf("{ topic: dlq, report_for: 0s }"), Format: "json"})
	require.Equal(t, ExitHealthy, code, errOut)
	assert.Contains(t, out, `"dead_lettered": null`, "report_for 0s: status does not look")

	code, out, errOut = run(Options{SeedBrokers: []string{c.addr}})
	require.Equal(t, ExitHealthy, code, errOut)
	assert.NotContains(t, out, "dead-lettered", "no topic known: status does not look")
	code, out, errOut = run(Options{SeedBrokers: []string{c.addr}, DeadLetterTopic: "dlq"})
	require.Equal(t, ExitHealthy, code, errOut)
	assert.Contains(t, out, "dead-lettered: 2 in the last 24h to dlq,", "the flag, with report_for's default")

	code, out, errOut = run(Options{ConfigPath: conf(`{ topic: 'dlq-${! meta("kafka_topic") }' }`)})
	require.Equal(t, ExitHealthy, code, errOut)
	assert.Contains(t, out, `dead-lettered: unknown (dead_letter.topic ("dlq-${! meta(\"kafka_topic\") }") is interpolated per message, so it names no one topic: give the topic with --dead-letter-topic)`)
	code, out, errOut = run(Options{ConfigPath: conf(`{ topic: 'dlq-${! meta("kafka_topic") }' }`), DeadLetterTopic: "dlq"})
	require.Equal(t, ExitHealthy, code, errOut)
	assert.Contains(t, out, "dead-lettered: 2 in the last 24h to dlq,")

	var o, e bytes.Buffer
	require.Equal(t, ExitUnknown, Run(c.ctx, Options{SeedBrokers: []string{c.addr}, Group: "g", DeadLetterTopic: "dlq", Timeout: time.Second}, &o, &e))
	assert.Equal(t, "status: --dead-letter-topic (\"dlq\") goes with --share-group: a consumer group's dead letters are reported from its commits\n", e.String())
	assert.Empty(t, o.String())
}

// share makes group a share group with a member that polls topic until
// the test ends, so that DescribeShareGroups knows it.
func share(t *testing.T, addr, group, topic string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	member, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ShareGroup(group), kgo.ConsumeTopics(topic))
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			member.PollFetches(ctx)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		member.Close()
	})
	require.Eventually(t, func() bool {
		var out, errOut bytes.Buffer
		return Run(ctx, Options{SeedBrokers: []string{addr}, ShareGroup: group, Format: "json", Timeout: time.Second}, &out, &errOut) == ExitHealthy &&
			strings.Contains(out.String(), `"member_id"`)
	}, 10*time.Second, 20*time.Millisecond, "the member to join")
}

// kafka_share's report_for default is the one status uses without -c.
func TestShareReportForDefault(t *testing.T) {
	pc, err := plugin.ShareConfigSpec().ParseYAML("seed_brokers: [ x ]\ntopics: [ t ]\nshare_group: g\n", nil)
	require.NoError(t, err)
	tgt, err := shareTargetFromParsed(pc)
	require.NoError(t, err)
	assert.Equal(t, defaultShareReportFor, tgt.DeadLetterReportFor)
	assert.Equal(t, "", tgt.DeadLetterTopic)
}

// FuzzShareDeadLetterLine feeds the report records with headers from
// untrusted bytes (anyone who may produce to the dead-letter topic writes
// them), each naming the group. Invariants: nothing panics; a record is
// counted or reported malformed, never both, never neither; the line is
// one line of printable text; the JSON encodes.
//
// The input is split at 0x00 into alternating keys and values, a key
// starting with 0x01 getting the dead_letter_ prefix.
func FuzzShareDeadLetterLine(f *testing.F) {
	join := func(r *kgo.Record) []byte {
		var b []byte
		for _, h := range r.Headers {
			b = append(append(append(b, h.Key...), 0), h.Value...)
			b = append(b, 0)
		}
		return b
	}
	at := time.UnixMilli(1_800_000_000_000)
	f.Add(join(letter("g", 0, 5, at, at, "http: status=503")))
	f.Add(join(letter("g", 0, 5, at, at, "\x1b[31m\u202e\n")))
	f.Add([]byte("\x01topic\x00o\u202e\x00\x01error\x00\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		parts := bytes.Split(in, []byte{0})
		r := &kgo.Record{Topic: "dlq", Partition: 1, Offset: 7}
		for i := 0; i+1 < len(parts); i += 2 {
			key := string(parts[i])
			if len(key) > 0 && key[0] == 1 {
				key = deadletter.Prefix + key[1:]
			}
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: key, Value: parts[i+1]})
		}
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: deadletter.HeaderShareGroup, Value: []byte("g")})
		d := &ShareDeadLetters{Topic: "dlq", ReportFor: time.Hour}
		d.add(r, time.UnixMilli(math.MinInt64)) // every time a header can hold is within
		if d.Count+d.Malformed != 1 {
			t.Fatalf("count %d, malformed %d: want one of them", d.Count, d.Malformed)
		}
		line := d.line()
		for _, c := range line + d.MalformedErr {
			if c < 0x20 || c == 0x7f {
				t.Fatalf("line %q holds a control character", line)
			}
		}
		var out bytes.Buffer
		if err := WriteShareText(&out, &ShareReport{Group: "g", DeadLetters: d}); err != nil {
			t.Fatal(err)
		}
		if err := WriteShareJSON(&out, &ShareReport{Group: "g", DeadLetters: d}); err != nil {
			t.Fatal(err)
		}
	})
}
