package prometheus

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"
)

// newTestExporter builds an exporter the way Benthos does: by parsing a YAML
// config against ConfigSpec and handing it to the registered constructor.
func newTestExporter(t *testing.T, yaml string) *Exporter {
	t.Helper()
	conf, err := ConfigSpec().ParseYAML(yaml, service.NewEmptyEnvironment())
	require.NoError(t, err)
	m, err := newFromParsed(conf, nil)
	require.NoError(t, err)
	e, ok := m.(*Exporter)
	require.True(t, ok, "constructor returned %T", m)
	return e
}

// scrape serves one GET /metrics through the exporter's handler.
func scrape(t *testing.T, e *Exporter) string {
	t.Helper()
	rec := httptest.NewRecorder()
	e.HandlerFunc()(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	return rec.Body.String()
}

// scrapeURL performs a real HTTP GET and returns the body.
func scrapeURL(url string) (string, error) {
	res, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return "", err
	}
	if res.StatusCode != http.StatusOK {
		return "", &statusError{res.StatusCode}
	}
	return string(b), nil
}

type statusError struct{ code int }

func (e *statusError) Error() string { return "unexpected status " + strconv.Itoa(e.code) }

// sample returns the value of the series whose exposition line starts with
// series (metric name plus its exact label set, e.g. `foo{a="b"}`), and
// whether it was found.
func sample(body, series string) (float64, bool) {
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, series+" ")
		if !ok {
			continue
		}
		// A timestamp may follow the value.
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return 0, false
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return 0, false
		}
		return v, true
	}
	return 0, false
}

// requireSample asserts that series is exposed with exactly value want.
func requireSample(t *testing.T, body, series string, want float64) {
	t.Helper()
	got, ok := sample(body, series)
	require.True(t, ok, "series %s not found in:\n%s", series, body)
	require.InDelta(t, want, got, 1e-9, "series %s", series)
}
