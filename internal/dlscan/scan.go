// Package dlscan reads a dead-letter topic without joining a group: a
// snapshot of each partition's offsets (Snapshot), and a scan of spans of
// offsets in order (Scan). `watermark-connect dead-letter` reads whole
// topics with it, `watermark-connect status --share-group` the tail of one.
//
// The functions keep no state; a Scan uses the client it is given, which
// must consume nothing else meanwhile.
package dlscan

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

// Opts are the client options Scan needs.
func Opts() []kgo.Opt { return []kgo.Opt{kgo.KeepControlRecords()} }

// Span is the offsets of one partition to read: [From, To).
type Span struct{ From, To int64 }

// Snapshot returns each partition of topic with its log start and end
// offsets now: what is read is what the topic held when the command
// started, so that a scan ends even while the input keeps writing.
func Snapshot(ctx context.Context, adm *kadm.Client, topic string) (map[int32]Span, error) {
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
	spans := map[int32]Span{}
	ends.Each(func(o kadm.ListedOffset) {
		s := Span{To: o.Offset}
		if st, ok := starts.Lookup(o.Topic, o.Partition); ok {
			s.From = st.Offset
		}
		spans[o.Partition] = s
	})
	if len(spans) == 0 {
		return nil, fmt.Errorf("dead-letter topic %q: no partitions", topic)
	}
	return spans, nil
}

// Scan reads each partition of topic over its span with cl, which consumes
// nothing else, joining no group, and calls fn with every record, in offset
// order within a partition. It returns when every partition has reached the
// end of its span, at fn's first error, or when ctx ends: then the error
// names the partitions not read to their end.
//
// cl must keep control records (Opts): the markers of transactions take
// offsets, the end offset counts them, and a partition that ends in one is
// otherwise never seen to reach its end. Control records are not handed to
// fn. A partition whose last offsets were compacted away is still never
// seen to reach its end: the inputs write no compacted topic, and a scan of
// one ends with ctx.
func Scan(ctx context.Context, cl *kgo.Client, topic string, spans map[int32]Span, fn func(*kgo.Record) error) error {
	pos := map[int32]int64{} // next offset to read, of the partitions not at their end
	start := map[int32]kgo.Offset{}
	for p, s := range spans {
		if s.From < s.To {
			pos[p] = s.From
			start[p] = kgo.NewOffset().At(s.From)
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
				behind = append(behind, fmt.Sprintf("partition %d at offset %d of %d", p, pos[p], spans[p].To))
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
				end := spans[r.Partition].To
				if !reading || r.Offset < next || r.Offset >= end {
					continue // read already (a fetch of an earlier scan of the partition), or past the snapshot's end
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
