package plugin

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// start_offset sets where a partition without a commit starts, and nothing
// else: for all three values, a position out of range resumes at the log
// start (before, latest jumped to the log end, skipping records that still
// existed, and committed made the partition fatal).
func TestStartOffsetSetsTheStartOnly(t *testing.T) {
	for start, want := range map[string]kgo.Offset{
		startEarliest:  kgo.NewOffset().AtStart(),
		startLatest:    kgo.NewOffset().AtEnd(),
		startCommitted: kgo.NewOffset().AtStart(), // paused before its first fetch
	} {
		cl, err := kgo.NewClient(append(offsetOpts(start), kgo.SeedBrokers("127.0.0.1:1"))...)
		require.NoError(t, err)
		require.Equal(t, []any{want}, cl.OptValues(kgo.ConsumeStartOffset), start)
		require.Equal(t, []any{kgo.NewOffset().AtStart()}, cl.OptValues(kgo.ConsumeResetOffset), start)
		cl.Close()
	}
}
