package dlcmd

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
)

// A dead letter's headers are anyone's bytes. An error class holding U+202E
// and U+009B reached inspect's JSON raw (a terminal acts on them: U+009B
// starts an escape sequence, U+202E turns the line around; the text quotes
// error classes already, and refuses a topic that is no Kafka topic name),
// and an origin timestamp past the year 9999 printed as "10000-...", which
// RFC 3339 parsers refuse. The JSON now escapes the runes, and the times are
// clamped to the last instant RFC 3339 can write.
func TestInspectHostileHeaders(t *testing.T) {
	c := newCluster(t, kfake.SeedTopics(1, "orders.dlq"))
	class := "http \u202e503\u009b"
	far := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	c.produce(t, letter(0, "orders", 0, 10, far, 3, class))

	code, stdout, stderr := runCLI(t, "inspect", "--seed-brokers", c.addr, "--dead-letter-topic", "orders.dlq")
	require.Equal(t, ExitOK, code, stderr)
	for _, raw := range []string{"\u202e", "\u009b", "10000-"} {
		assert.NotContains(t, stdout, raw)
	}
	assert.Contains(t, stdout, `"http \u202e503\u009b"`)
	assert.Contains(t, stdout, "9999-12-31T23:59:59.999Z")

	code, stdout, stderr = runCLI(t, "inspect", "--seed-brokers", c.addr, "--dead-letter-topic", "orders.dlq", "--format", "json")
	require.Equal(t, ExitOK, code, stderr)
	for _, raw := range []string{"\u202e", "\u009b", "10000-"} {
		assert.NotContains(t, stdout, raw)
	}
	var got Summary
	require.NoError(t, json.Unmarshal([]byte(stdout), &got), stdout)
	require.Len(t, got.Origins, 1)
	require.Len(t, got.Origins[0].Errors, 1)
	assert.Equal(t, class, got.Origins[0].Errors[0].Error, "the escapes read back as the runes")
	_, err := time.Parse(time.RFC3339, got.Origins[0].Oldest.Timestamp)
	assert.NoError(t, err)
}

// --help showed "(default: 0)" for the range flags, which bound nothing
// when left out: an operator could read it as "partition 0 only" or "from
// offset 0 to offset 0".
func TestRedriveHelpDefaults(t *testing.T) {
	code, stdout, stderr := runCLI(t, "redrive", "--help")
	require.Equal(t, 0, code, stderr)
	assert.NotContains(t, stdout, "(default: 0)")
	for _, want := range []string{
		"only this partition of the dead-letter topic (default: every partition)",
		"(inclusive) (default: each partition's log start)",
		"(inclusive) (default: the last record when the command started)",
	} {
		assert.Contains(t, strings.Join(strings.Fields(stdout), " "), want)
	}
}
