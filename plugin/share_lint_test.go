package plugin

import (
	"strings"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"
)

// lintShare lints kafka_share fields through the real Benthos environment.
func lintShare(t *testing.T, fields string) []string {
	t.Helper()
	env := service.NewEnvironment() // the global one's plugins: kafka_share and drop
	conf := "input:\n  kafka_share:\n    " + strings.ReplaceAll(strings.TrimSpace(fields), "\n", "\n    ") + "\noutput:\n  drop: {}\n"
	lints, err := env.FullConfigSchema("", "").NewStreamConfigLinter().LintYAML([]byte(conf))
	require.NoError(t, err)
	var out []string
	for _, l := range lints {
		out = append(out, l.Error())
	}
	return out
}

// Lint refuses what start refuses, naming the field, the value and the
// limit; a good config lints clean.
func TestShareLint(t *testing.T) {
	const base = "seed_brokers: [ localhost:9092 ]\ntopics: [ orders ]\nshare_group: g\n"
	require.Empty(t, lintShare(t, base+"start_offset: earliest\ndead_letter: { topic: dlq, max_attempts: 3 }"))
	require.Empty(t, lintShare(t, base+"dead_letter: { topic: dlq, report_for: 0s }"), "0s: status does not look")
	require.Empty(t, lintShare(t, base+"dead_letter: { topic: dlq, report_for: 168h }"))
	for _, c := range []struct{ extra, want string }{
		{"members: 0", "members (0) must be between 1 and 64"},
		{"members: 65", "members (65) must be between 1 and 64"},
		{"batch_max_records: 0", "batch_max_records (0) must be between 1 and"},
		{"batch_max_bytes: lots", `batch_max_bytes ("lots") is not a byte size`},
		{"start_offset: committed", `start_offset ("committed") must be one of earliest, latest`},
		{"dead_letter: { max_attempts: 0 }", "dead_letter.max_attempts (0) must be at least 1"},
		{"dead_letter: { topic: orders }", `dead_letter.topic ("orders") is a topic this input consumes`},
		{"dead_letter: { topic: dlq, report_for: -1s }", "dead_letter.report_for (-1s) must be 0s (status does not look) or positive"},
		{"dead_letter: { report_for: soon }", `dead_letter.report_for ("soon")`},
		{"conn_idle_timeout: 1ms", "conn_idle_timeout (1ms) must be between 100ms and 15m"},
		{"consumer_group: g", "consumer_group"},
	} {
		lints := lintShare(t, base+c.extra)
		require.True(t, containsSub(lints, c.want), "lint of %q = %q, want one with %q", c.extra, lints, c.want)
	}
	require.True(t, containsSub(lintShare(t, "seed_brokers: [ localhost:9092 ]\ntopics: [ orders ]"), "share_group"), "share_group is required")
	require.True(t, containsSub(lintShare(t, "seed_brokers: [ localhost:9092 ]\nshare_group: g"), "at least one topic"), "topics are required")
}

// Start refuses what lint refuses: a negative dead_letter.report_for, with
// kafka_watermark's words, never reaches the status command.
func TestShareConfigReportFor(t *testing.T) {
	const base = "seed_brokers: [ localhost:9092 ]\ntopics: [ orders ]\nshare_group: g\n"
	pc, err := ShareConfigSpec().ParseYAML(base+"dead_letter: { topic: dlq, report_for: -90m }", nil)
	require.NoError(t, err)
	_, err = parseShareConfig(pc)
	require.ErrorContains(t, err, "dead_letter.report_for (-1h30m0s) must be 0s (status does not look) or positive")

	pc, err = ShareConfigSpec().ParseYAML(base+"dead_letter: { topic: dlq }", nil)
	require.NoError(t, err)
	d, err := pc.FieldDuration(fieldDeadLetter, fieldDeadLetterReportFor)
	require.NoError(t, err)
	require.Equal(t, 24*time.Hour, d, "the default, as kafka_watermark's")
}

func containsSub(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
