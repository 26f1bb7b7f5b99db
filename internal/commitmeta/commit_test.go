package commitmeta

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// epochsOf returns an EpochOf for ranges whose last records have the given
// epochs, as the plugin's answers them, that fails t when asked about an
// offset that is not the last of a range (the contract) and counts its
// calls in *calls.
func epochsOf(t testing.TB, ranges []Range, epochs []int32, calls *int) func(int64) int32 {
	return func(offset int64) int32 {
		*calls++
		i, found := slices.BinarySearchFunc(ranges, offset, func(r Range, off int64) int {
			switch {
			case r.To-1 < off:
				return -1
			case r.To-1 > off:
				return 1
			}
			return 0
		})
		if !found {
			t.Fatalf("EpochOf(%d): not the last offset of a range", offset)
		}
		return epochs[i]
	}
}

// encodeParts returns what Encode writes for the header and first kept
// ranges of c followed by fields (the reports, a= and l=, in the order of
// the Format section), each "" when absent: the bytes EncodeCommit must
// write, by the older code path.
func encodeParts(c Commit, kept int, fields ...string) string {
	var extra []string
	for _, f := range fields {
		if f != "" {
			extra = append(extra, f)
		}
	}
	s, _ := Encode(Meta{c.Base, c.Epoch, c.Delivered[:kept]}, strings.Join(extra, " "), math.MaxInt)
	return s
}

// attemptsField spells as, runs above base, as a= is specified, with fmt
// rather than the encoder's code; "" when there are none.
func attemptsField(base int64, as []Attempts) string {
	if len(as) == 0 {
		return ""
	}
	parts := make([]string, len(as))
	prev := base
	for i, a := range as {
		parts[i] = fmt.Sprintf("%d.%d.%d", a.From-prev, a.To-a.From, a.N)
		prev = a.To
	}
	return "a=" + strings.Join(parts, ",")
}

// checkEncodeCommit encodes c within maxBytes and checks what the package
// promises of it:
//   - the metadata is at most maxBytes, and "" only when the header does not
//     fit, with every range cut;
//   - appendCommitTo and EncodeCommit write the same bytes and report the
//     same cut and To as EncodeCommitKept;
//   - DecodeCommit reads back the header, exactly the ranges kept, the l=
//     of the last one (EpochOf of its To-1, -1 for anything lower), exactly
//     the runs of attempts kept (a prefix of c.Attempts, none when the
//     metadata is ""), and the reports written, with no error on any part;
//   - the bytes are those Encode writes for the same parts, in the order
//     of the Format section, l= last;
//   - the parts written follow the priority order: a stall or loss report
//     left out did not fit after the parts before it, and nothing after it
//     is written; with both written, one more run of attempts would not
//     fit after them; a dead-letter report left out did not fit after the
//     attempts kept, and no range is written; with every report written,
//     one more range (with its own l=) would not fit, nor any longer
//     prefix;
//   - with epochs that do not decrease, EpochOf is called at most 4 times.
//
// It returns the metadata and how many ranges were cut.
func checkEncodeCommit(t testing.TB, name string, c Commit, epochs []int32, maxBytes int) (string, int) {
	t.Helper()
	var calls int
	c.EpochOf = epochsOf(t, c.Delivered, epochs, &calls)
	s, k := EncodeCommitKept(c, maxBytes)
	cut, keptTo, ka := k.Cut, k.KeptTo, k.Attempts
	kept := len(c.Delivered) - cut
	if len(s) > max(maxBytes, 0) || cut < 0 || kept < 0 || ka < 0 || ka > len(c.Attempts) {
		t.Fatalf("%s: EncodeCommitKept(%d) = %q, %+v: longer than maxBytes or cut out of range", name, maxBytes, s, k)
	}
	if slices.IsSorted(epochs) && calls > 4 {
		t.Fatalf("%s: EncodeCommit(%d) called EpochOf %d times, want at most 4 for epochs that do not decrease", name, maxBytes, calls)
	}
	if s2, cut2, keptTo2 := EncodeCommit(c, maxBytes); s2 != s || cut2 != cut || keptTo2 != keptTo {
		t.Fatalf("%s: EncodeCommit(%d) = %q, %d, %d, but EncodeCommitKept = %q, %+v", name, maxBytes, s2, cut2, keptTo2, s, k)
	}
	wantTo := c.Base
	if kept > 0 {
		wantTo = c.Delivered[kept-1].To
	}
	if keptTo != wantTo {
		t.Fatalf("%s: EncodeCommit(%d) = %q, keptTo %d, want %d", name, maxBytes, s, keptTo, wantTo)
	}
	app, appCut, appTo := appendCommitTo([]byte("x"), c, maxBytes)
	if string(app) != "x"+s || appCut != cut || appTo != keptTo {
		t.Fatalf("%s: appendCommitTo(\"x\", %d) = %q, %d, %d, want %q, %d, %d", name, maxBytes, app, appCut, appTo, "x"+s, cut, keptTo)
	}

	// The least a commit says: its header, and the mark of its stall
	// when it is stalled (a header alone reads as not stalled).
	least := encodeParts(c, 0)
	if c.Stall != nil {
		least = encodeParts(c, 0, c.Stall.mark().Fields())
	}
	if s == "" {
		if len(least) <= maxBytes || cut != len(c.Delivered) || ka != 0 {
			t.Fatalf("%s: EncodeCommit(%d) = \"\", cut %d, but %q fits", name, maxBytes, cut, least)
		}
		return s, cut
	}
	if len(least) > maxBytes {
		t.Fatalf("%s: EncodeCommit(%d) = %q, but %q, the least it may write, does not fit", name, maxBytes, s, least)
	}

	d, err := DecodeCommit(s)
	if err != nil || d.RangesErr != nil || d.StallErr != nil || d.LossErr != nil || d.AttemptsErr != nil || d.DeadLetterErr != nil {
		t.Fatalf("%s: DecodeCommit(%q) = %v, errors %v, %v, %v, %v, %v", name, s, err, d.RangesErr, d.StallErr, d.LossErr, d.AttemptsErr, d.DeadLetterErr)
	}
	if (d.Attempts == nil) != (ka == 0) || !slices.Equal(d.Attempts, c.Attempts[:ka]) {
		t.Fatalf("%s: DecodeCommit(%q).Attempts = %v, want the first %d of %v", name, s, d.Attempts, ka, c.Attempts)
	}
	if !sameMeta(d.Meta, Meta{c.Base, c.Epoch, c.Delivered[:kept]}) {
		t.Fatalf("%s: DecodeCommit(%q) = %+v, want the first %d ranges of %+v", name, s, d.Meta, kept, c.Delivered)
	}
	l := ""
	if kept > 0 {
		want := max(epochs[kept-1], -1)
		if d.LastEpoch != want {
			t.Fatalf("%s: DecodeCommit(%q).LastEpoch = %d, want %d", name, s, d.LastEpoch, want)
		}
		l = "l=" + strconv.Itoa(int(want))
	} else if d.LastEpoch != -1 {
		t.Fatalf("%s: DecodeCommit(%q).LastEpoch = %d without ranges, want -1", name, s, d.LastEpoch)
	}

	stalled, lost, dead := c.Stall != nil, c.hasLoss(), c.hasDeadLetter()
	// marked: the whole stall did not fit, and its mark was written.
	marked := stalled && !c.Stall.MarkOnly && d.Stall != nil && d.Stall.MarkOnly
	var stallFields, lossFields, deadFields string
	switch {
	case marked:
		stallFields = c.Stall.mark().Fields()
	case stalled:
		stallFields = c.Stall.Fields()
	}
	if lost {
		lossFields = c.Loss.Fields()
	}
	if dead {
		deadFields = c.DeadLetter.Fields()
	}
	if d.Stall != nil && (!stalled || d.Stall.Fields() != stallFields) || d.Loss != nil && (!lost || d.Loss.Fields() != lossFields) ||
		d.DeadLetter != nil && (!dead || d.DeadLetter.Fields() != deadFields) {
		t.Fatalf("%s: DecodeCommit(%q) = stall %+v, loss %+v, dead letter %+v, want those of %+v, %+v, %+v",
			name, s, d.Stall, d.Loss, d.DeadLetter, c.Stall, c.Loss, c.DeadLetter)
	}
	wroteStall, wroteLoss, wroteDead := d.Stall != nil, d.Loss != nil, d.DeadLetter != nil
	if !wroteStall {
		stallFields = ""
	}
	if !wroteLoss {
		lossFields = ""
	}
	if !wroteDead {
		deadFields = ""
	}
	attempts := attemptsField(c.Base, c.Attempts[:ka])
	if want := encodeParts(c, kept, stallFields, lossFields, attempts, deadFields, l); s != want {
		t.Fatalf("%s: EncodeCommit(%d) = %q, want %q, as Encode writes the same parts", name, maxBytes, s, want)
	}

	switch {
	case stalled && !wroteStall:
		t.Fatalf("%s: EncodeCommit(%d) = %q: metadata of a stalled commit without the stall or its mark", name, maxBytes, s)
	case marked:
		if wroteLoss || ka > 0 || wroteDead || kept > 0 {
			t.Fatalf("%s: EncodeCommit(%d) = %q: a part after the stall is written with its mark", name, maxBytes, s)
		}
		if more := encodeParts(c, 0, c.Stall.Fields()); len(more) <= maxBytes {
			t.Fatalf("%s: EncodeCommit(%d) = %q, but %q with the whole stall fits", name, maxBytes, s, more)
		}
		return s, cut
	case lost && !wroteLoss:
		if ka > 0 || wroteDead || kept > 0 {
			t.Fatalf("%s: EncodeCommit(%d) = %q: a part after the loss is written without it", name, maxBytes, s)
		}
		if more := encodeParts(c, 0, stallFields, c.Loss.Fields()); len(more) <= maxBytes {
			t.Fatalf("%s: EncodeCommit(%d) = %q, but %q with the loss fits", name, maxBytes, s, more)
		}
		return s, cut
	}
	// The attempts never end the metadata: one more run does not fit
	// after the reports, whatever follows.
	if ka < len(c.Attempts) {
		if more := encodeParts(c, 0, stallFields, lossFields, attemptsField(c.Base, c.Attempts[:ka+1])); len(more) <= maxBytes {
			t.Fatalf("%s: EncodeCommit(%d) = %q, keeps %d runs of attempts, but %q with %d fits", name, maxBytes, s, ka, more, ka+1)
		}
	}
	if dead && !wroteDead {
		if kept > 0 {
			t.Fatalf("%s: EncodeCommit(%d) = %q: ranges are written without the dead-letter report", name, maxBytes, s)
		}
		if more := encodeParts(c, 0, stallFields, lossFields, attempts, c.DeadLetter.Fields()); len(more) <= maxBytes {
			t.Fatalf("%s: EncodeCommit(%d) = %q, but %q with the dead-letter report fits", name, maxBytes, s, more)
		}
		return s, cut
	}
	for k := kept + 1; k <= len(c.Delivered); k++ {
		if bare := encodeParts(c, k); len(bare) > maxBytes {
			break // so is every longer prefix, with reports and l= or not
		}
		more := encodeParts(c, k, stallFields, lossFields, attempts, deadFields, "l="+strconv.Itoa(int(max(epochs[k-1], -1))))
		if len(more) <= maxBytes {
			t.Fatalf("%s: EncodeCommit(%d) = %q, keeps %d ranges, but %q with %d fits", name, maxBytes, s, kept, more, k)
		}
	}
	return s, cut
}

// randEpochs returns the epochs of the last records of n ranges: most often
// not decreasing along the log, as a real log's, with steps that cross
// decimal digits and start at -1; sometimes arbitrary, below -1 too, for an
// EpochOf that breaks the rule.
func randEpochs(r *rand.Rand, n int) []int32 {
	epochs := make([]int32, n)
	if r.IntN(4) == 0 {
		for i := range epochs {
			epochs[i] = int32(r.Int64N(math.MaxInt32+4) - 3)
		}
		return epochs
	}
	e := []int64{-1, 0, 9, 99, math.MaxInt32 - 3}[r.IntN(5)]
	for i := range epochs {
		switch r.IntN(6) {
		case 0:
			e += 1
		case 1:
			e += r.Int64N(1000)
		case 2:
			e += r.Int64N(math.MaxInt32 / 4)
		}
		e = min(e, math.MaxInt32)
		epochs[i] = int32(e)
	}
	return epochs
}

// randText returns up to 2n bytes of anything: Fields makes it printable,
// cuts and escapes it.
func randText(r *rand.Rand, n int) string {
	b := make([]byte, r.IntN(2*n+1))
	for i := range b {
		if r.IntN(4) == 0 {
			b[i] = byte(r.IntN(256))
		} else {
			b[i] = byte('a' + r.IntN(26))
		}
	}
	return string(b)
}

// randReports returns a stall and a loss within their bounds, each nil
// half of the time; a Loss with Count 0, which is not written, stands for
// none some of the time.
func randReports(r *rand.Rand) (*Stall, *Loss) {
	var s *Stall
	var l *Loss
	if r.IntN(2) == 0 {
		first := r.Int64N(math.MaxInt64)
		last := first + r.Int64N(math.MaxInt64-first)
		since := time.UnixMilli(r.Int64N(1 << 42)).UTC()
		attempts := 1 + r.IntN(math.MaxInt32)
		s = &Stall{
			Report:   Report{First: first, Last: last, Since: since, Reason: randText(r, MaxReasonLen)},
			Attempts: attempts,
			Member:   randText(r, MaxMemberLen),
		}
		if r.IntN(8) == 0 {
			*s = s.mark() // carried from a commit that had room for the mark only
		}
	}
	switch r.IntN(4) {
	case 0:
		l = &Loss{}
	case 1, 2:
		first := r.Int64N(1 << 40)
		last := first + r.Int64N(1<<40)
		count := 1 + r.Int64N(last-first+1)
		since := time.UnixMilli(r.Int64N(1 << 42)).UTC()
		cause := []string{CauseRetention, CauseTruncation, CauseUnknown, "", "other"}[r.IntN(5)]
		l = &Loss{Report: Report{First: first, Last: last, Since: since, Reason: cause}, Count: count}
	}
	return s, l
}

// randAttempts returns runs of attempts at and above base, half of the
// time none: gaps of 0 (touching runs, and a first run at the base) to
// near MaxInt64, counts from 1 to MaxInt32.
func randAttempts(r *rand.Rand, base int64) []Attempts {
	if r.IntN(2) == 0 {
		return nil
	}
	magnitude := func(least int64) int64 {
		switch r.IntN(4) {
		case 0:
			return least
		case 1:
			return least + r.Int64N(100)
		case 2:
			return least + r.Int64N(1_000_000)
		default:
			return least + r.Int64N(math.MaxInt64/8)
		}
	}
	var as []Attempts
	prev := base
	for range 1 + r.IntN(60) {
		gap, n := magnitude(0), magnitude(1)
		if gap > math.MaxInt64-prev || n > math.MaxInt64-prev-gap {
			break // no room left below MaxInt64
		}
		count := []int32{1, 2, 1 + r.Int32N(1000), math.MaxInt32}[r.IntN(4)]
		as = append(as, Attempts{From: prev + gap, To: prev + gap + n, N: count})
		prev += gap + n
	}
	return as
}

// randDeadLetter returns a dead-letter report within its bounds, with
// arbitrary text for Error, or nil or one with Count 0 (none).
func randDeadLetter(r *rand.Rand) *DeadLetter {
	switch r.IntN(4) {
	case 0:
		return nil
	case 1:
		return &DeadLetter{}
	}
	first := r.Int64N(1 << 40)
	last := first + r.Int64N(1<<40)
	count := 1 + r.Int64N(last-first+1)
	since := time.UnixMilli(r.Int64N(1 << 42)).UTC()
	return &DeadLetter{Report: Report{First: first, Last: last, Since: since, Reason: randText(r, MaxReasonLen)}, Count: count}
}

// TestEncodeCommitProperty encodes 5,000 random commits (randMeta's ranges,
// randEpochs, randReports, randAttempts, randDeadLetter) within random
// budgets, exact ones and ones at the edges of the reports, and holds each
// to checkEncodeCommit.
func TestEncodeCommitProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(propertySeed, 3))
	// Outcomes seen, so the test cannot pass vacuously.
	var none, marked, headerOnly, reportsCut, attemptsCut, deadCut, rangesCut, whole int
	for i := range 5000 {
		m := randMeta(r)
		c := Commit{Base: m.Base, Epoch: m.Epoch, Delivered: m.Delivered}
		c.Stall, c.Loss = randReports(r)
		c.Attempts, c.DeadLetter = randAttempts(r, c.Base), randDeadLetter(r)
		epochs := randEpochs(r, len(c.Delivered))
		var calls int
		c.EpochOf = epochsOf(t, c.Delivered, epochs, &calls)
		full, _, _ := EncodeCommit(c, math.MaxInt)
		maxBytes := r.IntN(len(full)+16) - 4
		switch r.IntN(8) {
		case 0:
			maxBytes = len(full)
		case 1:
			maxBytes = len(full) - 1
		case 2:
			maxBytes = headerLen(c.Base, c.Epoch) + r.IntN(MaxStallFieldsLen+MaxLossFieldsLen+MaxDeadLetterFieldsLen)
		}
		name := fmt.Sprintf("seed %d case %d", propertySeed, i)
		s, cut := checkEncodeCommit(t, name, c, epochs, maxBytes)
		switch d, _ := DecodeCommit(s); {
		case s == "":
			none++
		case d.Stall != nil && d.Stall.MarkOnly && !c.Stall.MarkOnly:
			marked++
		case s == encodeParts(c, 0):
			headerOnly++
		case c.Stall != nil && d.Stall == nil || c.hasLoss() && d.Loss == nil:
			reportsCut++
		case len(d.Attempts) < len(c.Attempts):
			attemptsCut++
		case c.hasDeadLetter() && d.DeadLetter == nil:
			deadCut++
		case cut > 0:
			rangesCut++
		default:
			whole++
		}
	}
	if none < 100 || marked < 100 || headerOnly < 100 || reportsCut < 100 || attemptsCut < 100 || deadCut < 20 || rangesCut < 100 || whole < 100 {
		t.Fatalf("seed %d: outcomes none %d, stall marked %d, header only %d, reports cut %d, attempts cut %d, dead letter cut %d, ranges cut %d, whole %d, want at least 100 of each (20 dead letters cut)",
			propertySeed, none, marked, headerOnly, reportsCut, attemptsCut, deadCut, rangesCut, whole)
	}
}

// FuzzEncodeCommit builds a commit from arbitrary numbers (each 8 bytes of
// data is a gap, a length and an epoch step, scaled by shifts so magnitudes
// up to MaxInt64 and MaxInt32 occur; bit 7 of the last byte makes the epoch
// arbitrary instead of a step up; each 7 bytes of attempts is a gap that
// may be 0, a length and a count, scaled the same way), a stall, a loss and
// a dead-letter report present or not (reports), with arbitrary text in the
// stall and the dead-letter report, and an arbitrary budget, and holds it
// to checkEncodeCommit: never over maxBytes, the kept ranges, l=, the kept
// runs of attempts and the reports read back, the parts in priority order,
// and no longer prefix of attempts or ranges that fits.
func FuzzEncodeCommit(f *testing.F) {
	f.Add(int64(1200), int32(3), []byte{9, 0, 0, 49, 0, 0, 0, 0, 19, 0, 0, 39, 0, 0, 1, 0}, uint8(3), "http 503", 4096, []byte{})
	f.Add(int64(1200), int32(9), []byte{9, 0, 0, 49, 0, 0, 0, 0, 19, 0, 0, 39, 0, 0, 1, 0}, uint8(0), "", 32, []byte{})
	f.Add(int64(1200), int32(-1), []byte{9, 0, 0, 49, 0, 0, 0, 0, 19, 0, 0, 39, 0, 0, 6, 0, 9, 0, 0, 9, 0, 0, 45, 0}, uint8(0), "", 33, []byte{})
	f.Add(int64(math.MaxInt64-100), int32(math.MaxInt32), []byte{0, 0, 60, 0, 0, 60, 255, 255}, uint8(1), "caf\u00e9 \x00%", 60, []byte{})
	f.Add(int64(0), int32(0), []byte{}, uint8(3), "", 139, []byte{})
	f.Add(int64(1200), int32(3), []byte{9, 0, 0, 49, 0, 0, 0, 0}, uint8(7), "http 503", 4096, []byte{0, 0, 0, 10, 0, 0, 3, 5, 0, 0, 1, 0, 0, 255})
	f.Add(int64(1200), int32(3), []byte{9, 0, 0, 49, 0, 0, 0, 0}, uint8(4), "", 40, []byte{0, 0, 0, 10, 0, 0, 3, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1})
	f.Add(int64(math.MaxInt64-100), int32(1), []byte{}, uint8(4), "x", 4096, []byte{0, 0, 60, 0, 0, 60, 255})
	f.Fuzz(func(t *testing.T, base int64, epoch int32, data []byte, reports uint8, text string, maxBytes int, attempts []byte) {
		c := Commit{Base: base, Epoch: max(epoch, -1)}
		if c.Base < 0 {
			c.Base = -(c.Base + 1)
		}
		var epochs []int32
		e := int64(c.Epoch)
		prev := c.Base
		for ; len(data) >= 8; data = data[8:] {
			gap := 1 + int64(uint64(data[0])|uint64(data[1])<<8)<<(data[2]%48)
			n := 1 + int64(uint64(data[3])|uint64(data[4])<<8)<<(data[5]%48)
			if gap <= 0 || n <= 0 || gap >= math.MaxInt64-prev || n > math.MaxInt64-prev-gap {
				break
			}
			step := int64(data[6]) << (data[7] % 32)
			if data[7]&0x80 != 0 {
				e = int64(int32(uint32(data[6]) | uint32(data[7])<<24))
			} else {
				e = min(e+step, math.MaxInt32)
			}
			c.Delivered = append(c.Delivered, Range{prev + gap, prev + gap + n})
			epochs = append(epochs, int32(e))
			prev += gap + n
		}
		if reports&1 != 0 {
			c.Stall = &Stall{Report: Report{First: c.Base, Last: c.Base + int64(reports>>2), Since: since, Reason: text}, Attempts: 1 + int(reports>>2), Member: text}
			c.Stall.Last = max(c.Stall.Last, c.Stall.First) // past MaxInt64
		}
		if reports&2 != 0 {
			c.Loss = &Loss{Report: Report{First: 0, Last: c.Base, Since: since, Reason: text}, Count: 1 + c.Base/2}
		}
		if reports&4 != 0 {
			c.DeadLetter = &DeadLetter{Report: Report{First: c.Base / 2, Last: c.Base, Since: since, Reason: text}, Count: 1 + c.Base/4}
		}
		prev = c.Base
		for ; len(attempts) >= 7; attempts = attempts[7:] {
			gap := int64(uint64(attempts[0])|uint64(attempts[1])<<8) << (attempts[2] % 48)
			n := 1 + int64(uint64(attempts[3])|uint64(attempts[4])<<8)<<(attempts[5]%48)
			if gap < 0 || n <= 0 || gap > math.MaxInt64-prev || n > math.MaxInt64-prev-gap {
				break
			}
			count := max(1, int32(attempts[6])<<(attempts[6]%24))
			c.Attempts = append(c.Attempts, Attempts{From: prev + gap, To: prev + gap + n, N: count})
			prev += gap + n
		}
		checkEncodeCommit(t, "fuzz", c, epochs, maxBytes%8192)
	})
}

// benchCommit is benchMeta's ranges with epochs that grow along them, a
// stall whose text needs escaping, and a loss.
func benchCommit(n int) (Commit, []int32) {
	m := benchMeta(n)
	epochs := make([]int32, n)
	for i := range epochs {
		epochs[i] = int32(5 + i/10)
	}
	c := Commit{
		Base: m.Base, Epoch: m.Epoch, Delivered: m.Delivered,
		Stall: &Stall{Report: Report{First: m.Base, Last: m.Base + 99, Since: since, Reason: "http 503: service unavailable"}, Attempts: 4, Member: "orders-sink@pod-7"},
		Loss:  &Loss{Report: Report{First: 100, Last: 1199, Since: since, Reason: CauseRetention}, Count: 1100},
	}
	return c, epochs
}

// TestEncodeCommitAllocs holds EncodeCommit to one allocation, the string
// it returns, and appendCommitTo into a buffer with room to none, with both
// reports written (the stall's text escaped) and ranges cut. Like
// AllocsPerRun it counts the whole process, so it takes the least of a few
// measurements.
func TestEncodeCommitAllocs(t *testing.T) {
	c, epochs := benchCommit(600)
	var calls int
	c.EpochOf = epochsOf(t, c.Delivered, epochs, &calls)
	least := func(f func()) float64 {
		n := testing.AllocsPerRun(100, f)
		for range 4 {
			n = min(n, testing.AllocsPerRun(100, f))
		}
		return n
	}
	var s string
	var cut int
	if n := least(func() { s, cut, _ = EncodeCommit(c, 4096) }); n != 2 {
		t.Errorf("EncodeCommit allocates %v times, want 2 (the buffer and the string)", n)
	}
	if cut == 0 || !strings.Contains(s, "sr=http+503%3A+service+unavailable") {
		t.Fatalf("EncodeCommit = %q, cut %d: want a stall written and ranges cut", s, cut)
	}
	buf := make([]byte, 0, 4096)
	if n := least(func() { buf, _, _ = appendCommitTo(buf[:0], c, 4096) }); n != 0 {
		t.Errorf("appendCommitTo into a buffer with room allocates %v times, want 0", n)
	}
}

func TestEncodeCommitPanicsOnDriverBug(t *testing.T) {
	epochOf := func(int64) int32 { return 0 }
	for _, tc := range []struct {
		c    Commit
		want string // a part of the panic message
	}{
		{Commit{Base: -1}, "base -1 is negative"},
		{Commit{Epoch: -2}, "epoch -2 is below -1"},
		{Commit{Base: 10, Delivered: []Range{{10, 12}}, EpochOf: epochOf}, "not above base"},
		{Commit{Base: 10, Delivered: []Range{{12, 14}, {14, 16}}, EpochOf: epochOf}, "adjacent"},
		{Commit{Base: 10, Delivered: []Range{{12, 16}, {14, 18}}, EpochOf: epochOf}, "overlaps"},
		{Commit{Base: 10, Delivered: []Range{{12, 14}}}, "no EpochOf"},
	} {
		msg := func() (msg string) {
			defer func() { msg = fmt.Sprint(recover()) }()
			EncodeCommit(tc.c, 4096)
			return ""
		}()
		if !strings.Contains(msg, tc.want) {
			t.Errorf("EncodeCommit(%+v, 4096) panics with %q, want a panic naming %q", tc.c, msg, tc.want)
		}
	}
}

func BenchmarkEncodeCommit100Ranges(b *testing.B) {
	c, epochs := benchCommit(100)
	var calls int
	c.EpochOf = epochsOf(b, c.Delivered, epochs, &calls)
	b.ReportAllocs()
	for b.Loop() {
		if _, cut, _ := EncodeCommit(c, 4096); cut != 0 {
			b.Fatalf("EncodeCommit cut %d ranges, want 0", cut)
		}
	}
}

func BenchmarkAppendCommit600RangesCut(b *testing.B) {
	c, epochs := benchCommit(600)
	var calls int
	c.EpochOf = epochsOf(b, c.Delivered, epochs, &calls)
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf, _, _ = appendCommitTo(buf[:0], c, 4096)
	}
}
