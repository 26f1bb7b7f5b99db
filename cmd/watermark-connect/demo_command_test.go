package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The README's first command, `watermark-connect demo`, as the built binary
// runs it (with short replay timings); the demo itself is tested in
// internal/demo. It heals in place and status is healthy at the end; with
// --stall-replay-after 0 the partition stays stalled and status says so.
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

	out, code = runBinary(t, nil, "demo", "--partitions", "0")
	assert.NotEqual(t, 0, code)
	assert.Contains(t, out, "--partitions must be at least 1")
}
