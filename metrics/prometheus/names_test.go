package prometheus

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSanitiseMetricName(t *testing.T) {
	for in, want := range map[string]string{
		"input_received":  "input_received",
		"ns:recorded_sum": "ns:recorded_sum",
		"my-metric.total": "my_metric_total",
		"5xx_count":       "_5xx_count",
		"héllo":           "h_llo",
		"a b\x00c":        "a_b_c",
		"":                "",
	} {
		assert.Equal(t, want, sanitiseMetricName(in), in)
	}
}

func TestSanitiseLabelName(t *testing.T) {
	for in, want := range map[string]string{
		"path":       "path",
		"some-label": "some_label",
		"a:b":        "a_b",
		"2nd":        "_2nd",
		"__name__":   "_name__",
		"___":        "_",
		"_ok":        "_ok",
		"":           "",
	} {
		assert.Equal(t, want, sanitiseLabelName(in), in)
	}
	assert.Equal(t, []string{"le_", "x"}, sanitiseLabelNames([]string{"le", "x"}, true))
	assert.Equal(t, []string{"le", "x"}, sanitiseLabelNames([]string{"le", "x"}, false))
}

func TestTimerName(t *testing.T) {
	for in, want := range map[string]string{
		"input_latency_ns":  "input_latency_seconds",
		"duration_seconds":  "duration_seconds",
		"timer":             "timer",
		"_ns":               "_ns",
		"nanos_ns_not_unit": "nanos_ns_not_unit",
	} {
		assert.Equal(t, want, timerName(in), in)
	}
}
