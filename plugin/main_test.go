package plugin

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: the
// owner, committer, poller, log-end queries, retry and drain timers must all
// end with the input.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
