package dlcmd

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// scanned, when set, is called with every record scan reads: a seam for
// tests that follow what is still referenced. Nil outside tests.
var scanned func(*kgo.Record)

// scanOpts are the client options scan needs.
func scanOpts() []kgo.Opt { return []kgo.Opt{kgo.KeepControlRecords()} }

// span is the offsets of one partition to read: [from, to).
type span struct{ from, to int64 }

// snapshot returns each partition of topic with its log start and end
// offsets now: what is read is what the topic held when the command
// started, so that a scan ends even while the input keeps writing.
func snapshot(ctx context.Context, adm *kadm.Client, topic string) (map[int32]span, error) {
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("dead-letter topic %q: log start offsets: %w", topic, err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("dead-letter topic %q: end offsets: %w", topic, err)
	}
	spans := map[int32]span{}
	ends.Each(func(o kadm.ListedOffset) {
		s := span{to: o.Offset}
		if st, ok := starts.Lookup(o.Topic, o.Partition); ok {
			s.from = st.Offset
		}
		spans[o.Partition] = s
	})
	if len(spans) == 0 {
		return nil, fmt.Errorf("dead-letter topic %q: no partitions", topic)
	}
	return spans, nil
}

// scan reads each partition of topic over its span with cl, which consumes
// nothing else, joining no group, and calls fn with every record, in offset
// order within a partition. It returns when every partition has reached the
// end of its span, at fn's first error, or when ctx ends: then the error
// names the partitions not read to their end.
//
// cl must keep control records (scanOpts): the markers of transactions
// take offsets, the end offset counts them, and a partition that ends in
// one is otherwise never seen to reach its end. Control records are not
// handed to fn. A partition whose last offsets were compacted away is still
// never seen to reach its end: the input writes no compacted topic, and a
// scan of one ends with ctx.
func scan(ctx context.Context, cl *kgo.Client, topic string, spans map[int32]span, fn func(*kgo.Record) error) error {
	pos := map[int32]int64{} // next offset to read, of the partitions not at their end
	start := map[int32]kgo.Offset{}
	for p, s := range spans {
		if s.from < s.to {
			pos[p] = s.from
			start[p] = kgo.NewOffset().At(s.from)
		}
	}
	if len(pos) == 0 {
		return nil
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: start})
	defer cl.RemoveConsumePartitions(map[string][]int32{topic: slices.Collect(maps.Keys(spans))})

	for len(pos) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			var behind []string
			for _, p := range slices.Sorted(maps.Keys(pos)) {
				behind = append(behind, fmt.Sprintf("partition %d at offset %d of %d", p, pos[p], spans[p].to))
			}
			return fmt.Errorf("dead-letter topic %q not read to its end (%s): %w", topic, strings.Join(behind, ", "), err)
		}
		var errs []error
		fs.EachError(func(t string, p int32, err error) {
			errs = append(errs, fmt.Errorf("reading %s/%d: %w", t, p, err))
		})
		if err := errors.Join(errs...); err != nil {
			return err
		}
		var err error
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			for _, r := range fp.Records {
				if err != nil {
					return
				}
				next, reading := pos[r.Partition]
				end := spans[r.Partition].to
				if !reading || r.Offset < next || r.Offset >= end {
					continue // read already (a fetch of an earlier scan of the partition), or past the snapshot's end
				}
				if scanned != nil {
					scanned(r)
				}
				if !r.Attrs.IsControl() {
					if err = fn(r); err != nil {
						return
					}
				}
				pos[r.Partition] = r.Offset + 1
				if r.Offset+1 >= end {
					delete(pos, r.Partition)
				}
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}
