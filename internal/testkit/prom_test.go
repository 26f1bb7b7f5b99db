package testkit

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseMetricsLines(t *testing.T) {
	for _, c := range []struct {
		line string
		want Sample
		err  string // a part of the error, when it must fail
	}{
		{line: `up 1`, want: Sample{Name: "up", Value: 1}},
		{line: `up 1 1700000000000`, want: Sample{Name: "up", Value: 1}},
		{line: "up\t2.5", want: Sample{Name: "up", Value: 2.5}},
		{line: `a:b_c{} 3`, want: Sample{Name: "a:b_c", Value: 3}},
		{line: `kafka_watermark_committed_offset{partition="3",topic="orders"} 42`,
			want: Sample{Name: "kafka_watermark_committed_offset", Labels: map[string]string{"partition": "3", "topic": "orders"}, Value: 42}},
		{line: `kafka_watermark_lost_records_total{label="",partition="7",path="root.input",topic="chaos-1"} 120`,
			want: Sample{Name: "kafka_watermark_lost_records_total", Labels: map[string]string{"label": "", "partition": "7", "path": "root.input", "topic": "chaos-1"}, Value: 120}},
		{line: `m{a="x,y}z",b="q\"uo\\te\n",} 1e3`,
			want: Sample{Name: "m", Labels: map[string]string{"a": "x,y}z", "b": "q\"uo\\te\n"}, Value: 1000}},
		{line: `m{ a = "1" , b="2" } -Inf`, want: Sample{Name: "m", Labels: map[string]string{"a": "1", "b": "2"}, Value: math.Inf(-1)}},
		{line: `h_bucket{le="+Inf"} 7`, want: Sample{Name: "h_bucket", Labels: map[string]string{"le": "+Inf"}, Value: 7}},
		{line: `m`, err: "no value"},
		{line: `m{a="1"}`, err: "no value"},
		{line: `m{a="1"}2`, err: "no value"},
		{line: `m one`, err: "invalid syntax"},
		{line: `m 1 2 3`, err: "3 fields"},
		{line: `m 1 soon`, err: "timestamp"},
		{line: `m{a="1" 2`, err: "no , or }"},
		{line: `m{a=1} 2`, err: `no ="`},
		{line: `m{a="1} 2`, err: "closing quote"},
		{line: `m{a="\x"} 2`, err: "unknown escape"},
		{line: `m{a="1",a="2"} 2`, err: "twice"},
		{line: `m{="1"} 2`, err: "no label name"},
		{line: `{a="1"} 2`, err: "no metric name"},
		{line: `9m 1`, err: "no metric name"},
	} {
		got, err := ParseMetrics(strings.NewReader("# HELP m a metric\n# TYPE m gauge\n\n" + c.line + "\n"))
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseMetrics(%s) = %v, %v; want an error containing %q", c.line, got, err, c.err)
			}
		case err != nil:
			t.Errorf("ParseMetrics(%s): %v", c.line, err)
		default:
			if c.want.Labels == nil {
				c.want.Labels = map[string]string{}
			}
			if len(got) != 1 || !reflect.DeepEqual(got[0], c.want) {
				t.Errorf("ParseMetrics(%s) = %+v, want [%+v]", c.line, got, c.want)
			}
		}
	}
}

const exposition = `# HELP kafka_watermark_lag records
# TYPE kafka_watermark_lag gauge
kafka_watermark_lag{label="kafka_watermark",partition="0",path="root.input",topic="orders"} 5
kafka_watermark_lag{label="kafka_watermark",partition="1",path="root.input",topic="orders"} 7
kafka_watermark_lag{label="kafka_watermark",partition="1",path="root.input",topic="payments"} 100
kafka_watermark_lag{label="other",partition="1",path="root.input",topic="orders"} 1
kafka_watermark_lag{partition="x",topic="orders"} 1000
output_sent{label="",path="root.output"} 12
output_sent{label="",path="root.output.fallback"} 30
`

func TestScrapeMetrics(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(exposition))
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := ScrapeMetrics(ctx, strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(m), 7; got != want {
		t.Fatalf("%d samples, want %d", got, want)
	}
	// Series of one partition add up (two components, one metric name);
	// other topics and partitions that do not parse are left out.
	if got, want := m.ByPartition("kafka_watermark_lag", "orders"), map[int32]float64{0: 5, 1: 8}; !reflect.DeepEqual(got, want) {
		t.Errorf("ByPartition(lag, orders) = %v, want %v", got, want)
	}
	if got, n := m.Sum("output_sent"); got != 42 || n != 2 {
		t.Errorf("Sum(output_sent) = %v over %d series, want 42 over 2", got, n)
	}
	if got, n := m.Sum("absent"); got != 0 || n != 0 {
		t.Errorf("Sum(absent) = %v over %d series, want 0 over 0", got, n)
	}
	if _, err := ScrapeMetrics(ctx, strings.TrimPrefix(srv.URL, "http://")+"/nothing"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a scrape answered 404: err = %v, want the status", err)
	}
}
