package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The README's first command, `watermark-connect demo`, as the built binary
// runs it; the demo itself is tested in internal/demo.
func TestDemoCommand(t *testing.T) {
	t.Parallel()
	out, code := runBinary(t, nil, "demo", "--partitions", "2", "--records", "300", "--max-latency", "2ms", "--seed", "9")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "Summary (")
	assert.Contains(t, out, "seed 9")
	assert.Contains(t, out, "distinct records delivered: 300 of 300")

	out, code = runBinary(t, nil, "demo", "--partitions", "0")
	assert.NotEqual(t, 0, code)
	assert.Contains(t, out, "--partitions must be at least 1")
}
