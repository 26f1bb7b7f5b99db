package plugin

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"
)

// Regression: lint passed configs that start then refused (a negative
// duration, a duration or size without a unit it knows, drain_timeout above
// rebalance_timeout, a port that is not a number, which start retried for
// ever), and some of its errors named no field ("value beginning is not a
// valid option for this field"). Lint now runs start's checks: whatever
// start refuses for the config alone, lint refuses first, naming the field
// and the value, at the field's own line when one field is at fault (line 6
// below: lintFields puts the fields from line 3 on).
func TestLintRefusesWhatStartRefuses(t *testing.T) {
	env := service.NewEnvironment()
	require.NoError(t, Register(env))
	const base = "seed_brokers: [ \"127.0.0.1:1\" ]\ntopics: [ orders ]\nconsumer_group: g\n"
	for _, tc := range []struct {
		field string // the line under test, added after base
		line  int    // where lint must say it; 0: the input's line (two fields)
		want  string
	}{
		{"commit_period: -5s", 6, "commit_period (-5s) must be positive"},
		{"commit_period: 5 seconds", 6, `commit_period ("5 seconds") is not a duration: write it with its unit, such as 500ms, 5s or 1m30s`},
		{"batch_max_bytes: 1 megabyte", 6, `batch_max_bytes ("1 megabyte") is not a byte size such as 1048576, 512KiB or 1MB`},
		{"start_offset: beginning", 6, `start_offset ("beginning") must be one of earliest, latest, committed`},
		{"ordering: offset", 6, `ordering ("offset") must be one of none, key`},
		{"nack_retry: { max_backoff: 0s }", 6, "nack_retry.max_backoff (0s) must be positive"},
		{"request_timeout_overhead: 10ms", 6, "request_timeout_overhead (10ms) must be between 100ms and 15m"},
		{"max_pending_batches: 0", 6, "max_pending_batches (0) must be at least 1"},
		{"consumer_group: \"\"", 6, "consumer_group: a group name is required"},
		{"drain_timeout: 50s", 0, "drain_timeout (50s) must be below rebalance_timeout (45s)"},
		{"transaction_timeout: 500ms", 6, "transaction_timeout (500ms) must be between 1s and 15m"},
		{"exactly_once: true\ncommit_metadata: false", 0, "exactly_once: true needs commit_metadata: true"},
		{"exactly_once: true\ncommit_period: 2m", 0, "commit_period (2m0s) must be below transaction_timeout (1m0s)"},
	} {
		t.Run(tc.field, func(t *testing.T) {
			fields := base + tc.field + "\n"
			_, _, err := parseFields(t, fields)
			require.Error(t, err, "start accepts %s", tc.field)
			require.Contains(t, err.Error(), tc.want, "start's message")
			lints := lintFields(t, env, fields)
			require.Len(t, lints, 1, "lint of %s = %q", tc.field, lints)
			line := tc.line
			if line == 0 {
				line = 3 // Benthos gives the input's mapping, which starts at its first field
			}
			require.Equal(t, fmt.Sprintf("(%d,1) ", line), lints[0][:len(fmt.Sprintf("(%d,1) ", line))], "lint of %s = %q", tc.field, lints)
			require.Contains(t, lints[0], tc.want, "lint's message is start's")
		})
	}
	// Broker addresses: a port kgo cannot read was a retry loop at start.
	for _, addr := range []string{"localhost:notaport", "localhost:0", "localhost:70000", "[::1]x", ":9092"} {
		fields := "seed_brokers: [ \"" + addr + "\" ]\ntopics: [ orders ]\nconsumer_group: g\n"
		_, _, err := parseFields(t, fields)
		require.ErrorContains(t, err, fmt.Sprintf("seed_brokers: %q is not a broker address: want host:port", addr), addr)
		lints := lintFields(t, env, fields)
		require.Len(t, lints, 1, "lint of %s = %q", addr, lints)
		require.True(t, strings.HasPrefix(lints[0], "(3,1) "), "at seed_brokers' line: %q", lints)
	}
	for _, addr := range []string{"localhost", "localhost:9092", "[::1]:9092", "[::1]", "::1", "a:1,b:2"} {
		fields := "seed_brokers: [ \"" + addr + "\" ]\ntopics: [ orders ]\nconsumer_group: g\n"
		_, _, err := parseFields(t, fields)
		require.NoError(t, err, addr)
		require.Empty(t, lintFields(t, env, fields), addr)
	}
}
