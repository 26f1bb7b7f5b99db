package prometheus

import (
	"strings"
	"unicode/utf8"
)

// Prometheus restricts metric and label names to a small ASCII alphabet (the
// "legacy" scheme, which every scraper and query language understands), while
// Benthos lets callers pass arbitrary strings. Rather than rejecting such
// names, and thereby silently losing the metric, they are rewritten so that
// each invalid character becomes an underscore.

// Timer durations arrive in nanoseconds but are exported in seconds, the
// Prometheus base unit, so a Benthos-style "_ns" unit suffix would be a lie and
// is swapped for "_seconds".
const (
	nanosSuffix   = "_ns"
	secondsSuffix = "_seconds"
)

// bucketLabel is the label name histograms reserve for their bucket bounds;
// client_golang panics when a histogram is given a variable label of that name.
const bucketLabel = "le"

// sanitiseMetricName rewrites s so that it matches the Prometheus metric name
// pattern [a-zA-Z_:][a-zA-Z0-9_:]*. An empty string is returned unchanged so
// that client_golang's own validation rejects it.
func sanitiseMetricName(s string) string {
	return sanitise(s, true)
}

// sanitiseLabelName rewrites s so that it matches the Prometheus label name
// pattern [a-zA-Z_][a-zA-Z0-9_]* and does not use the "__" prefix, which
// Prometheus reserves for internal labels. An empty string is returned
// unchanged so that client_golang's own validation rejects it.
func sanitiseLabelName(s string) string {
	s = sanitise(s, false)
	if strings.HasPrefix(s, "__") {
		s = "_" + strings.TrimLeft(s, "_")
	}
	return s
}

// sanitiseLabelNames sanitises every name of a label key list. For histograms
// (timers) the reserved bucket label "le" is renamed to "le_" so that the
// metric remains usable instead of making client_golang panic.
func sanitiseLabelNames(names []string, histogram bool) []string {
	out := make([]string, len(names))
	for i, n := range names {
		n = sanitiseLabelName(n)
		if histogram && n == bucketLabel {
			n = bucketLabel + "_"
		}
		out[i] = n
	}
	return out
}

// timerName maps a sanitised timer name to its exported name: a trailing "_ns"
// becomes "_seconds", any other name is kept as given.
func timerName(name string) string {
	if base, ok := strings.CutSuffix(name, nanosSuffix); ok && base != "" {
		return base + secondsSuffix
	}
	return name
}

// sanitiseLabelValue makes a label value valid UTF-8, which Prometheus
// requires, replacing invalid byte sequences with U+FFFD.
func sanitiseLabelValue(v string) string {
	if utf8.ValidString(v) {
		return v
	}
	return strings.ToValidUTF8(v, "\uFFFD")
}

func sanitise(s string, allowColon bool) string {
	if s == "" {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 1)
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
			b.WriteRune(r)
		case r == ':' && allowColon:
			b.WriteRune(r)
		case r >= '0' && r <= '9':
			if i == 0 {
				// Names may not start with a digit; keep the digit rather
				// than replacing it so that "5xx" stays recognisable.
				b.WriteByte('_')
			}
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}
