package status

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Partitions that no member consumed and that had no commit read as
// healthy: a probe with --topics listed them with "-" for COMMITTED and
// exited 0 while records waited in them that nothing would deliver (and
// that a member assigned later with start_offset latest would skip). They
// now read "not consumed", and one holding records is unready
// (ExitNotConsumed); an empty one is shown but changes nothing.
func TestRunNotConsumed(t *testing.T) {
	c := newCluster(t, 3, "orders")
	require.NoError(t, createTopic(t, c, "quiet", 1))
	c.produce(t, "orders", 0, 10)
	c.produce(t, "orders", 1, 7)
	c.commit(t, "g", "orders", 0, 10, meta(t, 10, nil, nil))

	code, stdout, stderr := run(t, Options{SeedBrokers: []string{c.addr}, Group: "g", Topics: []string{"orders", "quiet"}})
	assert.Equal(t, ExitNotConsumed, code, stderr)
	assert.Contains(t, stdout, "orders/1: not consumed: no commit, and no member of the group is assigned it; 7 records wait (offsets 0-6)\n")
	assert.Contains(t, stdout, "orders/2: not consumed: no commit, and no member of the group is assigned it; its log holds no record\n")
	assert.Contains(t, stdout, "quiet/0: not consumed")
	assert.NotContains(t, stdout, "orders/0: not consumed", "a partition with a commit reads from its commit")
	assert.Contains(t, stdout, "group g: none of 4 partitions stalled; 3 of 4 not consumed\n")

	code, stdout, stderr = run(t, Options{SeedBrokers: []string{c.addr}, Group: "g", Topics: []string{"orders"}, Format: "json"})
	assert.Equal(t, ExitNotConsumed, code, stderr)
	var doc struct {
		Healthy    bool `json:"healthy"`
		Partitions []struct {
			NotConsumed bool `json:"not_consumed"`
		} `json:"partitions"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc), stdout)
	assert.False(t, doc.Healthy, "records wait that nothing delivers")
	require.Len(t, doc.Partitions, 3)
	assert.Equal(t, []bool{false, true, true}, []bool{doc.Partitions[0].NotConsumed, doc.Partitions[1].NotConsumed, doc.Partitions[2].NotConsumed})

	// Nothing waits in an empty partition: shown, and healthy.
	code, stdout, stderr = run(t, Options{SeedBrokers: []string{c.addr}, Group: "g", Topics: []string{"quiet"}})
	assert.Equal(t, ExitHealthy, code, stderr)
	assert.Contains(t, stdout, "quiet/0: not consumed: no commit, and no member of the group is assigned it; its log holds no record\n")
	assert.Contains(t, stdout, "group g: healthy, none of 1 partition stalled; 1 of 1 not consumed\n")

	// A stall comes first.
	c.commit(t, "g", "orders", 0, 5, meta(t, 5, nil, &testStall))
	code, _, stderr = run(t, Options{SeedBrokers: []string{c.addr}, Group: "g", Topics: []string{"orders"}})
	assert.Equal(t, ExitStalled, code, stderr)
}
