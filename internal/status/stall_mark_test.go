package status

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// Issue 29: with commit_metadata_max_bytes: 64, or after a broker refused
// metadata and the input halved its budget, the stall provenance did not
// fit and the commit was the header alone: status printed STALLED no and
// exited 0 while the pipeline logged the stall. The input now writes the
// stall's mark; status reads it as stalled, with the one offset it knows.
func TestRunStallMarkIsStalled(t *testing.T) {
	c := newCluster(t, 2, "orders")
	c.produce(t, "orders", 0, 100)
	c.produce(t, "orders", 1, 100)
	c.commit(t, "marked", "orders", 0, 100, meta(t, 100, nil, nil))
	// What the input commits for a stalled partition within 64 bytes.
	small, _, _ := commitmeta.EncodeCommit(commitmeta.Commit{Base: 20, Epoch: 0, Stall: &testStall, Loss: &testLoss}, 64)
	require.Equal(t, "wm1 o=20 e=0 sf=20", small)
	c.commit(t, "marked", "orders", 1, 20, small)

	code, stdout, stderr := run(t, Options{SeedBrokers: []string{c.addr}, Group: "marked"})
	assert.Equal(t, ExitStalled, code, "exit status; stderr: %s", stderr)
	assert.Contains(t, stdout, "orders  1          20         100      80   0                yes")
	assert.Contains(t, stdout, "orders/1: stalled: at offset 20 (the rest of the stall did not fit the commit metadata)\n")
	assert.Contains(t, stdout, "group marked: 1 of 2 partitions stalled")
	assert.NotContains(t, stdout, "commit metadata not used", "the mark is no malformed provenance")

	code, stdout, stderr = run(t, Options{SeedBrokers: []string{c.addr}, Group: "marked", Format: "json"})
	require.Equal(t, ExitStalled, code, stderr)
	var doc struct {
		Healthy    bool `json:"healthy"`
		Partitions []struct {
			Stalled bool           `json:"stalled"`
			Stall   map[string]any `json:"stall"`
		} `json:"partitions"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc), stdout)
	assert.False(t, doc.Healthy)
	require.Len(t, doc.Partitions, 2)
	assert.True(t, doc.Partitions[1].Stalled)
	assert.Equal(t, map[string]any{"first_offset": 20.0, "last_offset": nil, "since": nil, "age_s": nil, "attempts": nil,
		"reason": "", "member": "", "mark_only": true}, doc.Partitions[1].Stall)
}
