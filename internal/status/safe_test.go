package status

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A group name reached the output raw: U+009B (CSI, which starts a terminal
// escape sequence) and U+202E (which turns the rest of the line around)
// passed through the JSON, where encoding/json does not escape them, and
// through the text. Both now escape them, and the JSON reads back the same.
// (Commit metadata cannot carry them: commitmeta refuses any byte outside
// printable ASCII, and its error names the byte in hex.)
func TestRunEscapesWhatATerminalActsOn(t *testing.T) {
	c := newCluster(t, 2, "orders")
	c.produce(t, "orders", 0, 10)
	group := "g\u202ehealthy\u009b"
	c.commit(t, group, "orders", 0, 2, "")

	for _, format := range []string{"text", "json"} {
		code, stdout, stderr := run(t, Options{SeedBrokers: []string{c.addr}, Group: group, Format: format})
		require.Equal(t, ExitHealthy, code, stderr)
		assert.NotContains(t, stdout, "\u202e", format)
		assert.NotContains(t, stdout, "\u009b", format)
		assert.Contains(t, stdout, `g\u202ehealthy\u009b`, format)
		if format == "json" {
			var doc struct {
				Group string `json:"group"`
			}
			require.NoError(t, json.Unmarshal([]byte(stdout), &doc), stdout)
			assert.Equal(t, group, doc.Group, "the escapes read back as the runes")
		}
	}
}

// RFC 3339 has four-digit years. A stall, a loss and a dead-letter report
// whose since lay past the year 9999 printed "10000-01-01T00:00:00Z" and
// the like, which RFC 3339 parsers refuse; they now print the last instant
// RFC 3339 can write.
func TestRunSinceAfterYear9999(t *testing.T) {
	c := newCluster(t, 1, "orders")
	c.produce(t, "orders", 0, 100)
	far := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	stall, loss, dead := testStall, testLoss, testDeadLetter
	stall.Since, loss.Since, dead.Since = far, far, far
	c.commit(t, "g", "orders", 0, 20, meta(t, 20, nil, &stall, &loss, &dead))

	code, stdout, stderr := run(t, Options{SeedBrokers: []string{c.addr}, Group: "g"})
	require.Equal(t, ExitStalled, code, stderr)
	assert.NotContains(t, stdout, "10000-")
	assert.Contains(t, stdout, "(since 9999-12-31T23:59:59Z)")
	assert.Contains(t, stdout, "retention, since 9999-12-31T23:59:59Z)")
	assert.Contains(t, stdout, "http 400, since 9999-12-31T23:59:59Z)")

	code, stdout, stderr = run(t, Options{SeedBrokers: []string{c.addr}, Group: "g", Format: "json"})
	require.Equal(t, ExitStalled, code, stderr)
	var doc struct {
		Partitions []struct {
			Stall struct {
				Since string `json:"since"`
			} `json:"stall"`
			Lost struct {
				Since string `json:"since"`
			} `json:"lost"`
			DeadLettered struct {
				Since string `json:"since"`
			} `json:"dead_lettered"`
		} `json:"partitions"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc), stdout)
	require.Len(t, doc.Partitions, 1)
	p := doc.Partitions[0]
	for what, since := range map[string]string{"stall": p.Stall.Since, "lost": p.Lost.Since, "dead_lettered": p.DeadLettered.Since} {
		_, err := time.Parse(time.RFC3339, since)
		assert.NoError(t, err, "%s.since %q is RFC 3339", what, since)
		assert.Equal(t, "9999-12-31T23:59:59.999Z", since, what)
	}
}
