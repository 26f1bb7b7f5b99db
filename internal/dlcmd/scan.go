package dlcmd

import (
	"context"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/dlscan"
)

// scanned, when set, is called with every record scan reads: a seam for
// tests that follow what is still referenced. Nil outside tests.
var scanned func(*kgo.Record)

// scanOpts are the client options scan needs (dlscan.Opts).
func scanOpts() []kgo.Opt { return dlscan.Opts() }

// span is the offsets of one partition to read: [From, To).
type span = dlscan.Span

// snapshot is dlscan.Snapshot.
func snapshot(ctx context.Context, adm *kadm.Client, topic string) (map[int32]span, error) {
	return dlscan.Snapshot(ctx, adm, topic)
}

// scan is dlscan.Scan, calling scanned with every record it hands to fn.
func scan(ctx context.Context, cl *kgo.Client, topic string, spans map[int32]span, fn func(*kgo.Record) error) error {
	return dlscan.Scan(ctx, cl, topic, spans, func(r *kgo.Record) error {
		if scanned != nil {
			scanned(r)
		}
		return fn(r)
	})
}
