package dlcmd

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/status"
	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

func TestInspectText(t *testing.T) {
	c := seed(t)
	code, stdout, stderr := runCLI(t, "inspect", "--seed-brokers", c.addr, "--dead-letter-topic", "orders.dlq")
	require.Equal(t, ExitOK, code, stderr)
	assert.Empty(t, stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 6, stdout)
	for i, want := range []string{
		"TOPIC     PARTITION  COUNT  OLDEST  OLDEST TIMESTAMP          OLDEST FIRST FAILED       NEWEST  NEWEST TIMESTAMP          NEWEST FIRST FAILED       ERRORS",
		`orders    0          3      10      2026-03-01T12:00:00.000Z  2026-03-01T12:05:00.000Z  12      2026-03-01T12:02:00.000Z  2026-03-01T12:07:00.000Z  2 "http: status=503", 1 "timeout"`,
		`orders    1          1      5       2026-03-01T12:30:00.000Z  2026-03-01T12:35:00.000Z  5       2026-03-01T12:30:00.000Z  2026-03-01T12:35:00.000Z  1 "timeout"`,
		`payments  0          1      7       2026-03-01T13:30:00.000Z  2026-03-01T13:35:00.000Z  7       2026-03-01T13:30:00.000Z  2026-03-01T13:35:00.000Z  1 "bad request"`,
		"unparsable orders.dlq/1@2: header dead_letter_partition: missing",
		"dead-letter topic orders.dlq: 6 records in 2 partitions: 5 from 3 origin partitions, 1 unparsable",
	} {
		assert.Equal(t, want, strings.TrimRight(lines[i], " "), "line %d", i)
	}
}

func TestInspectJSON(t *testing.T) {
	c := seed(t)
	code, stdout, stderr := runCLI(t, "inspect", "--seed-brokers", c.addr, "--dead-letter-topic", "orders.dlq", "--format", "json")
	require.Equal(t, ExitOK, code, stderr)
	var got Summary
	require.NoError(t, json.Unmarshal([]byte(stdout), &got), stdout)
	assert.Equal(t, "orders.dlq", got.Topic)
	assert.Equal(t, 2, got.Partitions)
	assert.Equal(t, 6, got.Records)
	require.Len(t, got.Origins, 3)
	o := got.Origins[0]
	assert.Equal(t, Origin{
		Topic: "orders", Partition: 0, Count: 3,
		Oldest: LetterRef{Offset: 10, Timestamp: "2026-03-01T12:00:00.000Z", FirstFailed: "2026-03-01T12:05:00.000Z", DeadLetterPartition: 0, DeadLetterOffset: 1},
		Newest: LetterRef{Offset: 12, Timestamp: "2026-03-01T12:02:00.000Z", FirstFailed: "2026-03-01T12:07:00.000Z", DeadLetterPartition: 0, DeadLetterOffset: 2},
		Errors: []ErrorCount{{"http: status=503", 2}, {"timeout", 1}},
	}, o)
	assert.Equal(t, UnparsableCount{Count: 1, Records: []Unparsable{{Partition: 1, Offset: 2, Reason: "header dead_letter_partition: missing"}}}, got.Unparsable)

	// The keys are the documented snake_case ones.
	var raw map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &raw))
	assert.ElementsMatch(t, []string{"dead_letter_topic", "partitions", "records", "origins", "unparsable"}, keys(raw))
	origin := raw["origins"].([]any)[0].(map[string]any)
	assert.ElementsMatch(t, []string{"topic", "partition", "count", "oldest", "newest", "errors"}, keys(origin))
	assert.ElementsMatch(t, []string{"offset", "timestamp", "first_failed", "dead_letter_partition", "dead_letter_offset"}, keys(origin["oldest"].(map[string]any)))
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestInspectEmptyAndFailures(t *testing.T) {
	c := newCluster(t)
	code, stdout, stderr := runCLI(t, "inspect", "--seed-brokers", c.addr, "--dead-letter-topic", "nosuch", "--timeout", "5s")
	assert.Equal(t, ExitFailed, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, `dead-letter inspect: dead-letter topic "nosuch"`)

	code, _, stderr = runCLI(t, "inspect", "--seed-brokers", c.addr)
	assert.Equal(t, ExitFailed, code)
	assert.Contains(t, stderr, "--dead-letter-topic is required")

	code, _, stderr = runCLI(t, "inspect", "--seed-brokers", c.addr, "--dead-letter-topic", "x", "--format", "yaml")
	assert.Equal(t, ExitFailed, code)
	assert.Contains(t, stderr, `--format ("yaml") must be text or json`)

	code, _, stderr = runCLI(t, "inspect", "extra")
	assert.Equal(t, status.ExitUsage, code)
	assert.Contains(t, stderr, "unexpected arguments [extra]")
}

func TestInspectEmptyTopic(t *testing.T) {
	c := newCluster(t, kfakeTopics(3, "orders.dlq"))
	code, stdout, stderr := runCLI(t, "inspect", "--seed-brokers", c.addr, "--dead-letter-topic", "orders.dlq")
	require.Equal(t, ExitOK, code, stderr)
	assert.Equal(t, "dead-letter topic orders.dlq: 0 records in 3 partitions: 0 from 0 origin partitions, 0 unparsable\n", stdout)
}

// Bug (issue 29): a dead-letter topic that ends in a transaction marker
// (written by a transactional producer's commit) was never read to its end
// offset, which counts the marker: inspect and redrive waited out
// --timeout and failed. The scan now reads control records, without
// handing them on.
func TestTransactionMarkerAtTheEnd(t *testing.T) {
	c := newCluster(t, kfakeTopics(1, "orders.dlq", "orders"))
	txn, err := kgo.NewClient(kgo.SeedBrokers(c.addr), kgo.TransactionalID("dl-writer"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer txn.Close()
	require.NoError(t, txn.BeginTransaction())
	require.NoError(t, txn.ProduceSync(ctxFor(t), letter(0, "orders", 0, 10, t0, 1, "timeout"), letter(0, "orders", 0, 11, t0, 1, "timeout")).FirstErr())
	require.NoError(t, txn.EndTransaction(ctxFor(t), kgo.TryCommit))

	code, stdout, stderr := runCLI(t, "inspect", "--seed-brokers", c.addr, "--dead-letter-topic", "orders.dlq", "--timeout", "5s")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stdout, "dead-letter topic orders.dlq: 2 records in 1 partition: 2 from 1 origin partition, 0 unparsable\n")

	code, stdout, stderr = runCLI(t, "redrive", "--seed-brokers", c.addr, "--dead-letter-topic", "orders.dlq", "--timeout", "5s")
	require.Equal(t, ExitOK, code, stderr)
	assert.Equal(t, "redrove 2 of 2 selected records from orders.dlq\norders: 2 records from orders.dlq partition 0 offsets 0-1\n", stdout)
}

// Issue 30: against a listener that accepts and never answers, the
// command gives up at --timeout, naming the address and that it accepted
// the connection and never answered.
func TestInspectABrokerThatNeverAnswers(t *testing.T) {
	silent, err := testkit.NewSilent()
	require.NoError(t, err)
	t.Cleanup(silent.Close)
	code, stdout, stderr := runCLI(t, "inspect", "--seed-brokers", silent.Addr(), "--dead-letter-topic", "orders.dlq", "--timeout", "500ms")
	assert.Equal(t, ExitFailed, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "dead-letter inspect: not done within --timeout 500ms: cannot reach seed brokers "+silent.Addr()+
		": broker "+silent.Addr()+" accepted the connection and answered nothing in ")
}
