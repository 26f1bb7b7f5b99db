package tracker

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// model is the plain reference the tracker is checked against: every batch
// ever registered, kept forever in maps, and the watermark recomputed from
// scratch as the longest prefix of delivered batches.
type model struct {
	last    map[uint64]int64
	status  map[uint64]Status
	n       uint64 // registrations so far
	done    uint64 // length of the prefix consumed by advance
	stalled bool
}

func newModel() *model {
	return &model{last: map[uint64]int64{}, status: map[uint64]Status{}}
}

func (m *model) register(lastOffset int64) uint64 {
	seq := m.n
	m.last[seq] = lastOffset
	m.n++
	return seq
}

func (m *model) resolve(seq uint64, s Status) ResolveOutcome {
	switch {
	case seq < m.done:
		return AlreadyAdvanced
	case seq >= m.n:
		return Unregistered
	case m.status[seq] != pending:
		return Duplicate
	}
	m.status[seq] = s
	return Applied
}

func (m *model) advance() (int64, bool) {
	k := uint64(0)
	for k < m.n && m.status[k] == Delivered {
		k++
	}
	if k < m.n && m.status[k] == Failed {
		m.stalled = true
	}
	if k == m.done {
		return 0, false
	}
	m.done = k
	return m.last[k-1] + 1, true
}

func (m *model) pending() int { return int(m.n - m.done) }

// checkOps replays ops against a tracker and the model and fails on the first
// divergence. Each op is two bytes: a kind and an argument.
//
// Invariants checked after every step:
//   - Resolve returns the same outcome as the model.
//   - Advance returns the same (offset, moved) as the model.
//   - Head is the length of the prefix Advance consumed.
//   - The watermark strictly increases every time it moves.
//   - The watermark never passes the first offset of the earliest batch not
//     delivered (it is at most that batch's predecessor's last offset + 1).
//   - Stalled and Pending equal the model's; a stall never clears.
//   - Register panics on a last offset that does not exceed the previous
//     registration's, and the rejected registration changes nothing.
//
// Registrations carry strictly increasing last offsets; a register op with
// the high bit of its argument set first tries the same seq with a last
// offset equal to or below the previous one, which must be rejected.
func checkOps(t *testing.T, ops []byte) {
	t.Helper()
	tr := NewWithCapacity(2) // small, so growth is exercised
	m := newModel()
	var lastOffset int64 = -1
	var wm int64 = -1
	for i := 0; i+1 < len(ops); i += 2 {
		kind, arg := ops[i]%8, ops[i+1]
		switch kind {
		case 0, 1, 2: // register, with an offset gap of 0..3
			if arg&0x80 != 0 && m.n > 0 {
				// Equal to, or up to 3 below, the previous last offset.
				bad := lastOffset - int64((arg>>2)%4)
				next, pending := tr.NextSeq(), tr.Pending()
				want := fmt.Sprintf("seq %d, previous last offset %d, received %d", m.n, lastOffset, bad)
				if msg := registerPanic(tr, m.n, bad); msg != "tracker: register with non-increasing last offset: "+want {
					t.Fatalf("op %d: Register(%d, %d) after last offset %d panicked with %q, want one naming %q", i/2, m.n, bad, lastOffset, msg, want)
				}
				if tr.NextSeq() != next || tr.Pending() != pending {
					t.Fatalf("op %d: rejected Register changed NextSeq/Pending from %d/%d to %d/%d", i/2, next, pending, tr.NextSeq(), tr.Pending())
				}
			}
			lastOffset += 1 + int64(arg%4) // strictly increasing
			seq := m.register(lastOffset)
			tr.Register(seq, lastOffset)
		case 3, 4, 5, 6: // resolve, mostly delivered; may name a stale or unknown seq
			s := Delivered
			if kind == 6 && arg%4 == 0 {
				s = Failed
			}
			seq := uint64(arg) % (m.n + 2)
			if got, want := tr.Resolve(seq, s), m.resolve(seq, s); got != want {
				t.Fatalf("op %d: Resolve(%d, %v) = %v, want %v", i/2, seq, s, got, want)
			}
		case 7:
			got, moved := tr.Advance()
			want, wantMoved := m.advance()
			if moved != wantMoved || (moved && got != want) {
				t.Fatalf("op %d: Advance() = (%d, %v), want (%d, %v)", i/2, got, moved, want, wantMoved)
			}
			if moved {
				if got <= wm {
					t.Fatalf("op %d: watermark %d after %d, want strictly increasing", i/2, got, wm)
				}
				wm = got
			}
		}
		// The watermark never passes an undelivered batch.
		for seq := uint64(0); seq < m.n; seq++ {
			if m.status[seq] != Delivered {
				floor := int64(0)
				if seq > 0 {
					floor = m.last[seq-1] + 1
				}
				if wm > floor {
					t.Fatalf("op %d: watermark %d passes undelivered seq %d (starts at %d)", i/2, wm, seq, floor)
				}
				break
			}
		}
		if tr.Stalled() != m.stalled {
			t.Fatalf("op %d: Stalled() = %v, want %v", i/2, tr.Stalled(), m.stalled)
		}
		if tr.Pending() != m.pending() {
			t.Fatalf("op %d: Pending() = %d, want %d", i/2, tr.Pending(), m.pending())
		}
		if tr.Head() != m.done {
			t.Fatalf("op %d: Head() = %d, want %d", i/2, tr.Head(), m.done)
		}
	}
}

// registerPanic calls tr.Register and returns its panic message, or "" if it
// did not panic.
func registerPanic(tr *PartitionTracker, seq uint64, lastOffset int64) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	tr.Register(seq, lastOffset)
	return ""
}

func TestModelRandomInterleavings(t *testing.T) {
	for seed := range uint64(2000) {
		r := rand.New(rand.NewPCG(seed, 0x5eed))
		ops := make([]byte, 2*(50+r.IntN(400)))
		for i := range ops {
			ops[i] = byte(r.Uint32())
		}
		checkOps(t, ops)
	}
}

// FuzzTracker drives the tracker with arbitrary interleavings of register,
// resolve (delivered or failed, including stale and unknown sequences) and
// advance, and checks after every step, against a map-based model:
//   - same Resolve outcome and same Advance result;
//   - the watermark strictly increases whenever it moves;
//   - the watermark never passes the first undelivered batch;
//   - same Stalled flag (and a stall never clears) and same Pending count;
//   - registered last offsets strictly increase: Register panics on one that
//     does not exceed the previous registration's (consumed or not), naming
//     both offsets, and leaves the tracker unchanged.
func FuzzTracker(f *testing.F) {
	f.Add([]byte{0, 0, 3, 0, 7, 0})
	f.Add([]byte{0, 0, 0, 1, 0, 2, 4, 1, 3, 0, 4, 1, 5, 2, 7, 0})
	f.Add([]byte{0, 0, 0, 0, 6, 0, 7, 0, 0, 0, 3, 1, 7, 0})
	f.Add([]byte{0, 1, 1, 0x80, 3, 0, 7, 0, 2, 0x87, 0, 0x8b, 4, 1, 7, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		checkOps(t, ops)
	})
}
