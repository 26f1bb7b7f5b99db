package testkit

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Sample is one series of a scrape: a metric name, its labels and its
// value. It is a plain value: safe for concurrent reads.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Metrics is one scrape, its samples in the order served. It is a plain
// value: safe for concurrent reads, not for concurrent changes.
type Metrics []Sample

// ScrapeMetrics reads http://addr/metrics (a binary's Benthos HTTP server
// with the Prometheus exporter) and parses it with ParseMetrics.
func ScrapeMetrics(ctx context.Context, addr string) (Metrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET http://%s/metrics: %s", addr, resp.Status)
	}
	return ParseMetrics(resp.Body)
}

// ParseMetrics reads the Prometheus text format (version 0.0.4): a line is
// blank, a comment (#, HELP and TYPE included, all skipped) or a sample,
//
//	name{label="value",...} value [timestamp]
//
// the braces optional, a trailing comma in them allowed, label values
// escaped with \\, \" and \n, and the value any float Go parses (NaN, +Inf).
// Any other line is an error that quotes it: a format the tests cannot read
// must fail them, not lose series.
func ParseMetrics(r io.Reader) (Metrics, error) {
	var out Metrics
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			return nil, fmt.Errorf("metrics line %q: %w", line, err)
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

// parseSample parses one sample line, trimmed.
func parseSample(line string) (Sample, error) {
	s := Sample{Labels: map[string]string{}}
	i := 0
	for i < len(line) && isNameByte(line[i], i == 0) {
		i++
	}
	if i == 0 {
		return s, fmt.Errorf("no metric name")
	}
	s.Name, line = line[:i], line[i:]
	if strings.HasPrefix(line, "{") {
		rest, err := parseLabels(line[1:], s.Labels)
		if err != nil {
			return s, err
		}
		line = rest
	}
	if line == "" || (line[0] != ' ' && line[0] != '\t') {
		return s, fmt.Errorf("no value after the name and labels")
	}
	f := strings.Fields(line)
	if len(f) > 2 {
		return s, fmt.Errorf("%d fields after the name and labels, want a value and at most a timestamp", len(f))
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return s, err
	}
	if len(f) == 2 {
		if _, err := strconv.ParseInt(f[1], 10, 64); err != nil {
			return s, fmt.Errorf("timestamp: %w", err)
		}
	}
	s.Value = v
	return s, nil
}

// parseLabels reads label pairs up to and including the closing brace into
// into, and returns what follows it.
func parseLabels(s string, into map[string]string) (string, error) {
	for {
		s = strings.TrimLeft(s, " \t")
		if strings.HasPrefix(s, "}") {
			return s[1:], nil
		}
		i := 0
		for i < len(s) && isNameByte(s[i], i == 0) && s[i] != ':' {
			i++
		}
		if i == 0 {
			return "", fmt.Errorf("no label name at %q", s)
		}
		name := s[:i]
		s = strings.TrimLeft(s[i:], " \t")
		if !strings.HasPrefix(s, "=") {
			return "", fmt.Errorf("label %s: no =\" after its name", name)
		}
		s = strings.TrimLeft(s[1:], " \t")
		if !strings.HasPrefix(s, `"`) {
			return "", fmt.Errorf("label %s: no =\" after its name", name)
		}
		val, rest, err := unescapeLabel(s[1:])
		if err != nil {
			return "", fmt.Errorf("label %s: %w", name, err)
		}
		if _, dup := into[name]; dup {
			return "", fmt.Errorf("label %s twice", name)
		}
		into[name] = val
		s = strings.TrimLeft(rest, " \t")
		switch {
		case strings.HasPrefix(s, ","):
			s = s[1:]
		case strings.HasPrefix(s, "}"):
		default:
			return "", fmt.Errorf("label %s: no , or } after its value", name)
		}
	}
}

// unescapeLabel reads a label value up to its closing quote, undoing the
// format's three escapes, and returns what follows the quote.
func unescapeLabel(s string) (string, string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return b.String(), s[i+1:], nil
		case '\\':
			if i+1 == len(s) {
				return "", "", fmt.Errorf("value ends in a backslash")
			}
			i++
			switch s[i] {
			case '\\', '"':
				b.WriteByte(s[i])
			case 'n':
				b.WriteByte('\n')
			default:
				return "", "", fmt.Errorf("unknown escape \\%c", s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", "", fmt.Errorf("value without its closing quote")
}

// isNameByte reports whether c may appear in a metric name, at its start
// when first: [a-zA-Z_:][a-zA-Z0-9_:]*.
func isNameByte(c byte, first bool) bool {
	return c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9')
}

// Find returns the samples of metric name.
func (m Metrics) Find(name string) []Sample {
	var out []Sample
	for _, s := range m {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// Sum returns the sum of metric name over its series, and how many series
// it has (0: the metric is not served, which a reader may need to tell from
// a sum of 0).
func (m Metrics) Sum(name string) (sum float64, series int) {
	for _, s := range m.Find(name) {
		sum += s.Value
		series++
	}
	return sum, series
}

// ByPartition returns the values of metric name for topic (its "topic"
// label), summed by its "partition" label; series without a partition that
// parses as an int32 are left out. A counter never incremented has no
// series, so an absent partition reads 0.
func (m Metrics) ByPartition(name, topic string) map[int32]float64 {
	out := map[int32]float64{}
	for _, s := range m.Find(name) {
		if s.Labels["topic"] != topic {
			continue
		}
		p, err := strconv.ParseInt(s.Labels["partition"], 10, 32)
		if err != nil {
			continue
		}
		out[int32(p)] += s.Value
	}
	return out
}
