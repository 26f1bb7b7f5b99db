package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The README's first command, `watermark-connect demo`, as the built binary
// runs it (with short replay timings); the demo itself is tested in
// internal/demo. It heals in place and status is healthy at the end; with
// --stall-replay-after 0 the partition stays stalled and status says so;
// with --dead-letter-after the batch goes to the dead-letter topic.
func TestDemoCommand(t *testing.T) {
	t.Parallel()
	out, code := runBinary(t, nil, "demo", "--partitions", "2", "--records", "300", "--max-latency", "2ms", "--seed", "9",
		"--stall-replay-after", "400ms", "--fail-for", "100ms")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "Summary (")
	assert.Contains(t, out, "seed 9")
	assert.Contains(t, out, "distinct records delivered: 300 of 300")
	assert.Contains(t, out, "watermark-connect status, asked of the broker, sees the stall (exit 1)")
	assert.Contains(t, out, "Replay 1 in place")
	assert.Contains(t, out, "status after the stop:      exit 0")

	out, code = runBinary(t, nil, "demo", "--partitions", "2", "--records", "300", "--max-latency", "2ms", "--seed", "9",
		"--stall-replay-after", "0")
	require.Equal(t, 0, code, "a stall is the demo's point, not its failure:\n%s", out)
	assert.Contains(t, out, "status after the stop:      exit 1")
	assert.Contains(t, out, "the partition stays stalled at offset")

	// --dead-letter-after 2: the failed batch, rejected on every delivery,
	// is in the dead-letter topic after its second attempt (the first
	// replay), and its partition commits to its end in the same process.
	out, code = runBinary(t, nil, "demo", "--partitions", "2", "--records", "300", "--max-latency", "2ms", "--seed", "9",
		"--stall-replay-after", "400ms", "--dead-letter-after", "2")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "delivery attempt 2 of 2 (kafka_delivery_attempt; dead_letter.max_attempts 2)")
	assert.Contains(t, out, "written to the dead-letter topic watermark-demo-dlq after 2 attempts")
	// How many records the failed batch holds depends on the fetches.
	assert.Regexp(t, `dead-lettered records:      [1-9]\d* to watermark-demo-dlq \(dead_letter.max_attempts 2\)`, out)
	assert.Regexp(t, `dead-lettered after 2 attempt\(s\) \(1 replay\(s\)\): [1-9]\d* record\(s\), at the log end`, out)
	assert.Regexp(t, `dead-letter topic watermark-demo-dlq, read back from the broker after the stop: [1-9]\d* record\(s\)`, out)
	assert.Regexp(t, `record\(s\), each after 2 attempt\(s\)`, out)
	assert.Contains(t, out, "dead_letter_attempts=2 dead_letter_first_failed_ms=")
	assert.Contains(t, out, "status after the stop:      exit 0")

	out, code = runBinary(t, nil, "demo", "--partitions", "0")
	assert.NotEqual(t, 0, code)
	assert.Contains(t, out, "--partitions must be at least 1")
}

// `demo --ordering key`, as the README gives it, with short timings: the
// per-key check finds no key out of order, and the narration shows the
// failed batch's key waiting while the partition's other keys landed past
// it (the sink's own count, so the line breaks if a key is not held).
func TestDemoCommandOrderingKey(t *testing.T) {
	t.Parallel()
	out, code := runBinary(t, nil, "demo", "--ordering", "key", "--partitions", "2", "--records", "600", "--batch-max-records", "10",
		"--max-latency", "20ms", "--seed", "9", "--stall-replay-after", "400ms", "--fail-for", "100ms")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "ordering: key, 8 keys")
	assert.Regexp(t, `key order: +0 keys delivered out of order over 600 records \(8 keys\)`, out)
	assert.Regexp(t, `batches sharing a key: +0 went out holding a key of another batch not yet answered`, out)
	assert.Regexp(t, `partition \d: the sink accepted the batch of keys? k\d+[^;]*; while it waited, [1-9]\d* record\(s\) of other keys went past offset \d+, and 0 of its own`, out)
	assert.Regexp(t, `held for their key: +keys? k\d+`, out)
	assert.Contains(t, out, "distinct records delivered: 600 of 600")
	assert.Contains(t, out, "status after the stop:      exit 0")

	out, code = runBinary(t, nil, "demo", "--ordering", "sideways")
	assert.NotEqual(t, 0, code)
	assert.Contains(t, out, `--ordering must be one of none, key; got "sideways"`)
}
