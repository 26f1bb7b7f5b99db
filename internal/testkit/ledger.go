package testkit

import (
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"slices"
)

// Record is one record as the test pipelines render it, with the mapping
//
//	root = {"t": @kafka_topic, "p": @kafka_partition, "o": @kafka_offset, "v": content().string()}
//
// A pipeline that maps fewer fields (the replay benchmark sends only p and
// o) leaves the others empty; a kafka_share pipeline adds "a", the
// delivery attempt. Like Entry, Dup and Alt, a Record is a plain
// value, copied freely and safe to read from any goroutine.
type Record struct {
	T string `json:"t"`           // topic
	P int32  `json:"p"`           // partition
	O int64  `json:"o"`           // offset
	V string `json:"v"`           // value
	A int    `json:"a,omitempty"` // kafka_delivery_attempt, where the mapping sets it
}

// NoPartition is the partition of a record that has no place in a ledger:
// a sink's Decode gives it to the records of an output that does not say
// where they come from. A Ledger counts them (Records, ByInstance) and
// nothing else.
const NoPartition int32 = -1

// Entry is what a Ledger knows of one offset of one partition. The zero
// Entry is an offset never delivered.
type Entry struct {
	Count       uint32 // deliveries, duplicates and other values included
	Hash        uint32 // HashValue of the value first delivered
	FirstArrive int64  // Unix ns: arrival of the request that first delivered it
	FirstAck    int64  // Unix ns: when the sink first recorded it (before its 200)
	Inst        uint16 // Ledger.Instances index of the process that first delivered it
}

// Dup is one delivery of an offset with the value first recorded there,
// after the first delivery.
type Dup struct {
	P    int32
	O    int64
	At   int64  // Unix ns, when recorded
	Inst uint16 // the process that delivered it again (Ledger.Instances)
}

// Alt is one delivery of an offset with another value than the one first
// recorded there: corruption, unless the log itself was rewritten (an
// unclean leader election); the caller decides.
type Alt struct {
	P    int32
	O    int64
	Hash uint32 // HashValue of the value delivered
	At   int64  // Unix ns, when recorded
	Inst uint16 // the process that delivered it (Ledger.Instances)
}

// maxBad caps Ledger.Bad: one broken pipeline must not fill the memory
// with copies of one complaint.
const maxBad = 1000

// Ledger is an account of deliveries: per partition and offset, how often
// and what came first, and the problems seen on the way. Parts, Dups and
// Alts only grow while a sink records into it. The prefix and out-of-order
// bookkeeping is kept by Record, so a Ledger that tests build by hand (to
// feed a checker) has only what they put in its exported fields.
//
// A Ledger is not safe for concurrent use: a Sink guards its own with its
// lock and hands out copies (Snapshot) or calls under that lock (View).
type Ledger struct {
	// Parts holds an Entry per offset for each partition. A partition's
	// slice grows as offsets arrive, in steps, so its length is not the
	// log end: Entries past the last delivered offset are zero.
	Parts      [][]Entry
	Dups       []Dup
	Alts       []Alt
	Bad        []string          // the first maxBad problems seen
	BadCount   int               // every problem seen, those past maxBad too
	OutOfOrder int64             // batches recorded after a later batch of their partition
	Records    int64             // records recorded, duplicates included
	ByInstance map[string]int64  // records recorded, by X-Instance header
	Instances  map[string]uint16 // X-Instance header -> index, from 1, in order of first delivery

	topic string                        // records of another topic are bad; "" checks none
	want  func(p int32, o int64) string // the value each offset must have; nil checks none

	// prefix[p] is the first offset of p never delivered; it only grows.
	prefix []int64
	// maxFirst[p] is the highest first offset of a batch of p recorded so
	// far (-1 before the first); it only grows.
	maxFirst []int64
}

// NewLedger returns an empty ledger for partitions partitions of topic
// (records of another topic, or of a partition outside [0, partitions), are
// bad and not counted; topic "" accepts any topic). want, when not nil,
// gives the value each offset must hold; a record with another value is
// bad, and counted all the same.
func NewLedger(topic string, partitions int, want func(p int32, o int64) string) *Ledger {
	l := &Ledger{Parts: make([][]Entry, partitions), ByInstance: map[string]int64{}, Instances: map[string]uint16{},
		topic: topic, want: want, prefix: make([]int64, partitions), maxFirst: make([]int64, partitions)}
	for i := range l.maxFirst {
		l.maxFirst[i] = -1
	}
	return l
}

// HashValue is the 32-bit FNV-1a of v, the digest a Ledger keeps of each
// value.
func HashValue(v string) uint32 {
	h := fnv.New32a()
	_, _ = io.WriteString(h, v)
	return h.Sum32()
}

// Note adds a problem to Bad (up to maxBad of them) and counts it.
func (l *Ledger) Note(format string, args ...any) {
	l.BadCount++
	if len(l.Bad) < maxBad {
		l.Bad = append(l.Bad, fmt.Sprintf(format, args...))
	}
}

// Record notes one successful delivery of batch b, recorded at ack (Unix
// ns). A batch is meant to hold one partition's records in offset order;
// one that mixes partitions is noted as bad, and its records are counted.
func (l *Ledger) Record(b Batch, ack int64) {
	recs := b.Records
	if len(recs) == 0 {
		return
	}
	inst, ok := l.Instances[b.Instance]
	if !ok {
		inst = uint16(len(l.Instances) + 1)
		l.Instances[b.Instance] = inst
	}
	l.ByInstance[b.Instance] += int64(len(recs))
	l.Records += int64(len(recs))
	arrive := b.Arrived.UnixNano()
	p0, first := recs[0].P, recs[0].O
	for _, r := range recs {
		if r.P == NoPartition {
			continue
		}
		if (l.topic != "" && r.T != l.topic) || r.P < 0 || int(r.P) >= len(l.Parts) || r.O < 0 {
			l.Note("record from an unexpected place: %+v", r)
			continue
		}
		if l.want != nil {
			if want := l.want(r.P, r.O); r.V != want {
				l.Note("record %d/%d has value %q, want %q", r.P, r.O, r.V, want)
			}
		}
		if r.P != p0 {
			l.Note("one batch holds partitions %d and %d", p0, r.P)
		}
		c := l.Parts[r.P]
		for int64(len(c)) <= r.O {
			c = append(c, make([]Entry, max(len(c), 4096))...)
		}
		l.Parts[r.P] = c
		e := &c[r.O]
		h := HashValue(r.V)
		switch {
		case e.Count == 0:
			e.Hash, e.FirstArrive, e.FirstAck, e.Inst = h, arrive, ack, inst
		case e.Hash == h:
			l.Dups = append(l.Dups, Dup{P: r.P, O: r.O, At: ack, Inst: inst})
		default:
			l.Alts = append(l.Alts, Alt{P: r.P, O: r.O, Hash: h, At: ack, Inst: inst})
		}
		e.Count++
		if r.O == l.prefix[r.P] {
			l.advance(r.P)
		}
	}
	if p0 < 0 || int(p0) >= len(l.maxFirst) {
		return
	}
	if first < l.maxFirst[p0] {
		l.OutOfOrder++
	} else {
		l.maxFirst[p0] = first
	}
}

// advance moves p's prefix past every delivered offset.
func (l *Ledger) advance(p int32) {
	c := l.Parts[p]
	for l.prefix[p] < int64(len(c)) && c[l.prefix[p]].Count > 0 {
		l.prefix[p]++
	}
}

// at returns the entry of offset o of partition p (zero when never
// delivered).
func (l *Ledger) at(p int32, o int64) Entry {
	if p < 0 || int(p) >= len(l.Parts) || o < 0 || o >= int64(len(l.Parts[p])) {
		return Entry{}
	}
	return l.Parts[p][o]
}

// Count returns how often offset o of partition p was delivered.
func (l *Ledger) Count(p int32, o int64) int { return int(l.at(p, o).Count) }

// Prefix returns the first offset of partition p never delivered. It is
// kept by Record; on a Ledger built by hand it is computed from Parts.
func (l *Ledger) Prefix(p int32) int64 {
	if p < 0 || int(p) >= len(l.Parts) {
		return 0
	}
	if int(p) < len(l.prefix) {
		return l.prefix[p]
	}
	var o int64
	for o < int64(len(l.Parts[p])) && l.Parts[p][o].Count > 0 {
		o++
	}
	return o
}

// Missing returns the first offset in [from, to) of partition p never
// delivered, or -1 when all were: a commit that claims that range as
// delivered must pass this check.
func (l *Ledger) Missing(p int32, from, to int64) int64 {
	if p < 0 || int(p) >= len(l.Parts) {
		return from
	}
	for o := max(from, l.Prefix(p)); o < to; o++ {
		if l.at(p, o).Count == 0 {
			return o
		}
	}
	return -1
}

// ReceivedIn returns how many offsets of [from, to) of partition p were
// delivered, and those that were not.
func (l *Ledger) ReceivedIn(p int32, from, to int64) (received int64, missing []int64) {
	for o := max(from, 0); o < to; o++ {
		if l.at(p, o).Count > 0 {
			received++
			continue
		}
		missing = append(missing, o)
	}
	return received, missing
}

// End returns one past the highest offset of partition p delivered (0 when
// none was).
func (l *Ledger) End(p int32) int64 {
	if p < 0 || int(p) >= len(l.Parts) {
		return 0
	}
	c := l.Parts[p]
	for o := int64(len(c)) - 1; o >= 0; o-- {
		if c[o].Count > 0 {
			return o + 1
		}
	}
	return 0
}

// Distinct returns how many offsets were delivered at least once, over
// every partition.
func (l *Ledger) Distinct() int64 {
	var n int64
	for _, c := range l.Parts {
		for _, e := range c {
			if e.Count > 0 {
				n++
			}
		}
	}
	return n
}

// Since returns, per partition, the offsets delivered in l more often than
// in old (an earlier copy of the same ledger), with how many more times.
func (l *Ledger) Since(old *Ledger) map[int32]map[int64]int {
	out := map[int32]map[int64]int{}
	for p, c := range l.Parts {
		for o, e := range c {
			if d := int(e.Count) - old.Count(int32(p), int64(o)); d > 0 {
				if out[int32(p)] == nil {
					out[int32(p)] = map[int64]int{}
				}
				out[int32(p)][int64(o)] = d
			}
		}
	}
	return out
}

// Clone returns a deep copy of l.
func (l *Ledger) Clone() *Ledger {
	c := *l
	c.Parts = make([][]Entry, len(l.Parts))
	for p, es := range l.Parts {
		c.Parts[p] = slices.Clone(es)
	}
	c.Dups, c.Alts, c.Bad = slices.Clone(l.Dups), slices.Clone(l.Alts), slices.Clone(l.Bad)
	c.ByInstance, c.Instances = maps.Clone(l.ByInstance), maps.Clone(l.Instances)
	c.prefix, c.maxFirst = slices.Clone(l.prefix), slices.Clone(l.maxFirst)
	return &c
}
