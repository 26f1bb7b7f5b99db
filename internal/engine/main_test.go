package engine

import (
	"testing"

	// The resource builder of testMetrics needs the standard tracer and
	// logger components.
	_ "github.com/redpanda-data/benthos/v4/public/components/pure"
	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: the
// owner, committer, log-end queries, retry and drain timers must all end
// with the engine.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
