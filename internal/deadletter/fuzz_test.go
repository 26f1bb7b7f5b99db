package deadletter

import (
	"bytes"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// FuzzParse feeds Parse headers from untrusted bytes (anyone who may produce
// to the dead-letter topic writes them). Invariants:
//
//   - Parse never panics;
//   - it fails with a *ProvenanceError whose Err is one of its sentinels, or
//     returns a Provenance with the guarantees its doc lists;
//   - a parsed Provenance survives Letter and Parse again unchanged (what
//     Parse accepts, Letter writes back the same), its share group too.
//
// The input is split at 0x00 into alternating keys and values; a key without
// "dead_letter_" gets it prepended when it starts with 0x01, so that the
// fuzzer reaches the provenance headers quickly.
func FuzzParse(f *testing.F) {
	join := func(r *kgo.Record) []byte {
		var b []byte
		for _, h := range r.Headers {
			b = append(append(append(b, h.Key...), 0), h.Value...)
			b = append(b, 0)
		}
		return b
	}
	f.Add(join(Letter(origin(), "dlq", testF)))
	f.Add(join(with(HeaderOffset, []byte("-3"), false)))
	f.Add(join(with(HeaderOffset, []byte("1"), true)))
	f.Add([]byte("\x01topic\x00orders\x00\x01partition\x009"))
	f.Add(join(Letter(origin(), "dlq", testShareF)))
	f.Add(join(with(HeaderShareGroup, []byte{}, true)))
	f.Fuzz(func(t *testing.T, in []byte) {
		parts := bytes.Split(in, []byte{0})
		var r kgo.Record
		for i := 0; i+1 < len(parts); i += 2 {
			key := string(parts[i])
			if len(key) > 0 && key[0] == 1 {
				key = Prefix + key[1:]
			}
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: key, Value: parts[i+1]})
		}
		p, err := Parse(&r)
		if err != nil {
			var pe *ProvenanceError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse error %T is not a *ProvenanceError: %v", err, err)
			}
			if !errors.Is(err, ErrMissingHeader) && !errors.Is(err, ErrDuplicateHeader) && !errors.Is(err, ErrInvalidValue) {
				t.Fatalf("Parse error %v wraps no sentinel", err)
			}
			_ = err.Error()
			return
		}
		if _, err := topicName([]byte(p.Topic)); err != nil || p.Partition < 0 || p.Offset < 0 || p.Attempts < 1 {
			t.Fatalf("Parse = %+v, breaks its guarantees", p)
		}
		if p.ShareGroup != "" && len(p.ShareGroup) > maxShareGroupLen {
			t.Fatalf("Parse = %+v: share group longer than %d bytes", p, maxShareGroupLen)
		}
		if p.Timestamp.Location().String() != "UTC" || p.FirstFailed.Location().String() != "UTC" {
			t.Fatalf("Parse = %+v: times not in UTC", p)
		}
		back := kgo.Record{Topic: p.Topic, Partition: p.Partition, Offset: p.Offset, Timestamp: p.Timestamp}
		again, err := Parse(Letter(&back, "dlq", Failure{Attempts: p.Attempts, Error: p.Error, FirstFailed: p.FirstFailed, Member: p.Member, ShareGroup: p.ShareGroup}))
		p.RedrivenFrom = "" // Letter drops it
		if err != nil || again != p {
			t.Fatalf("Parse(Letter(Parse(r))) = %+v, %v; want %+v", again, err, p)
		}
	})
}
